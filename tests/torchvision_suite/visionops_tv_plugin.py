"""A pytest plugin that runs torchvision's own operator tests
(test/test_ops.py of the installed torchvision, fetched at run time by
scripts/run-torchvision-tests.sh, never copied here) with visionops in place
of torchvision's operators.

Before any test module is imported, torchvision.ops' functions and modules
that visionops provides are replaced by visionops' (also inside
torchvision.ops.boxes and torchvision.ops.poolers, whose own helpers call
them). What the suite tests that visionops deliberately does differently is
marked xfail(strict=True) with the README's reason, so the run fails on
anything else, and also when a documented difference stops being one.
Tests of quantized tensors and of TorchScript compilation of the Python
wrappers are deselected (the next issue); the gradient checks that also
script a wrapper (or a function calling one) run with torch.jit.script
passing callables through unchanged (counted in the summary)."""
import functools

import pytest

# test ids: "Class::test" (any parametrization) -> reason
DESELECT = {
    # quantized tensors: the next issue
    "TestRoIAlign::test_qroialign": "quantized tensors (next issue)",
    "TestRoIAlign::test_qroi_align_multiple_images": "quantized tensors (next issue)",
    "TestNMS::test_qnms": "quantized tensors (next issue)",
    # TorchScript compilation of the Python wrappers: the next issue
    "TestRoiPool::test_jit_boxes_list": "TorchScript of the Python wrappers (next issue)",
    "TestRoIAlign::test_jit_boxes_list": "TorchScript of the Python wrappers (next issue)",
    "TestDeformConv::test_forward_scriptability": "TorchScript of the Python wrappers "
                                                  "(next issue)",
    "TestBoxIou::test_iou_jit": "TorchScript of the Python wrappers (next issue)",
    "TestGeneralizedBoxIou::test_iou_jit": "TorchScript of the Python wrappers (next issue)",
    "TestDistanceBoxIoU::test_iou_jit": "TorchScript of the Python wrappers (next issue)",
    "TestCompleteBoxIou::test_iou_jit": "TorchScript of the Python wrappers (next issue)",
}

# test ids -> the README's deliberate difference they run into
XFAIL = {
    "TestRoiPool::test_boxes_shape": "README, deliberate differences: a malformed boxes argument "
                                     "raises VisionOpsValueError, not AssertionError",
    "TestPSRoIPool::test_boxes_shape": "README, deliberate differences: a malformed boxes "
                                       "argument raises VisionOpsValueError, not AssertionError",
    "TestRoIAlign::test_boxes_shape": "README, deliberate differences: a malformed boxes argument "
                                      "raises VisionOpsValueError, not AssertionError",
    "TestPSRoIAlign::test_boxes_shape": "README, deliberate differences: a malformed boxes "
                                        "argument raises VisionOpsValueError, not AssertionError",
    "TestDeformConv::test_wrong_sizes": "README, deliberate differences: error messages are "
                                        "visionops' own (the test matches torchvision's wording)",
}

# Tests whose gradient checks also torch.jit.script a wrapper (or a function
# calling one): they run with torch.jit.script passing callables through.
JIT_PASSTHROUGH = ("::test_backward",)

_REPLACED = []
_STATS = {"jit_passthrough": 0, "deselected": {}, "calls": {}}


def _counted(name, fn):
    """fn, counting its calls (the summary shows the suite reached visionops)."""

    @functools.wraps(fn)
    def counted(*args, **kwargs):
        _STATS["calls"][name] = _STATS["calls"].get(name, 0) + 1
        return fn(*args, **kwargs)

    return counted


def _replace_ops():
    import torch
    import torchvision.ops as tv_ops
    import torchvision.ops.boxes as tv_boxes
    import torchvision.ops.poolers as tv_poolers

    import visionops

    names = ["nms", "batched_nms", "box_iou", "generalized_box_iou", "distance_box_iou",
             "complete_box_iou", "roi_align", "roi_pool", "ps_roi_align", "ps_roi_pool",
             "deform_conv2d", "RoIAlign", "RoIPool", "PSRoIAlign", "PSRoIPool", "DeformConv2d",
             "MultiScaleRoIAlign"]
    for name in names:
        ours = getattr(visionops, name)
        if not isinstance(ours, type):
            ours = _counted(name, ours)
        for module in (tv_ops, tv_boxes, tv_poolers):
            if hasattr(module, name):
                setattr(module, name, ours)
                _REPLACED.append("%s.%s" % (module.__name__, name))
    return torch, visionops


def _jit_passthrough(torch):
    """torch.jit.script as the identity: inside the gradient-check tests that
    also script a visionops wrapper (or a test function calling one), the
    Python callable runs instead (TorchScript of the wrappers is the next
    issue); each pass-through is counted."""
    real = torch.jit.script

    @functools.wraps(real)
    def script(obj, *args, **kwargs):
        _STATS["jit_passthrough"] += 1
        return obj

    return real, script


def pytest_configure(config):
    torch, _ = _replace_ops()
    config._visionops_jit = _jit_passthrough(torch)
    config._visionops_torch = torch


def _key(item):
    cls = item.cls.__name__ + "::" if item.cls is not None else ""
    return cls + item.originalname


def pytest_collection_modifyitems(config, items):
    kept, dropped = [], []
    for item in items:
        key = _key(item)
        if key in DESELECT:
            dropped.append(item)
            reason = DESELECT[key]
            _STATS["deselected"][reason] = _STATS["deselected"].get(reason, 0) + 1
            continue
        if key in XFAIL:
            item.add_marker(pytest.mark.xfail(reason=XFAIL[key], strict=True))
        kept.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = kept


@pytest.fixture(autouse=True)
def _visionops_jit_scripting(request, monkeypatch):
    if any(request.node.nodeid.split("[")[0].endswith(s) for s in JIT_PASSTHROUGH):
        real, script = request.config._visionops_jit
        monkeypatch.setattr(request.config._visionops_torch.jit, "script", script)
    yield


def pytest_terminal_summary(terminalreporter):
    tr = terminalreporter
    tr.section("visionops in place of torchvision.ops")
    tr.write_line("replaced: %s" % ", ".join(sorted(set(n.split(".")[-1] for n in _REPLACED))))
    tr.write_line("calls into visionops' functions: %s" % ", ".join(
        "%s %d" % kv for kv in sorted(_STATS["calls"].items())))
    for reason, n in sorted(_STATS["deselected"].items()):
        tr.write_line("deselected %d: %s" % (n, reason))
    tr.write_line("torch.jit.script passed %d callables through unchanged in the gradient checks "
                  "(TorchScript of the Python wrappers: next issue)" % _STATS["jit_passthrough"])
