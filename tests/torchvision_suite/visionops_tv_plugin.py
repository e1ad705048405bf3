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
Tests of quantized tensors are deselected (the next issue). The suite's
TorchScript tests (torch.jit.script of the functions, of the modules, and
of test functions calling them) run as they are: visionops' functions
script as their typed torch implementations (visionops/_script.py)."""
import functools

import pytest

# test ids: "Class::test" (any parametrization) -> reason
DESELECT = {
    # quantized tensors: the next issue
    "TestRoIAlign::test_qroialign": "quantized tensors (next issue)",
    "TestRoIAlign::test_qroi_align_multiple_images": "quantized tensors (next issue)",
    "TestNMS::test_qnms": "quantized tensors (next issue)",
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

_REPLACED = []
_STATS = {"deselected": {}, "calls": {}}


def _counted(name, fn):
    """fn, counting its calls (the summary shows the suite reached visionops).
    functools.wraps copies fn's attributes, among them the ones that make
    torch.jit.script compile visionops' typed twin of fn (uncounted)."""

    @functools.wraps(fn)
    def counted(*args, **kwargs):
        _STATS["calls"][name] = _STATS["calls"].get(name, 0) + 1
        return fn(*args, **kwargs)

    return counted


def _replace_ops():
    import torchvision.ops as tv_ops
    import torchvision.ops.boxes as tv_boxes
    import torchvision.ops.poolers as tv_poolers

    import visionops
    import visionops.ops

    # Every function and module of visionops.ops that torchvision.ops also
    # has (so a new op's torchvision tests run on it with no edit here).
    modules = (tv_ops, tv_boxes, tv_poolers)
    names = [n for n in visionops.ops.__all__ if any(hasattr(m, n) for m in modules)]
    for name in names:
        ours = getattr(visionops.ops, name)
        if not isinstance(ours, type):
            ours = _counted(name, ours)
        for module in modules:
            if hasattr(module, name):
                setattr(module, name, ours)
                _REPLACED.append("%s.%s" % (module.__name__, name))


def pytest_configure(config):
    _replace_ops()


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


def pytest_terminal_summary(terminalreporter):
    tr = terminalreporter
    tr.section("visionops in place of torchvision.ops")
    tr.write_line("replaced: %s" % ", ".join(sorted(set(n.split(".")[-1] for n in _REPLACED))))
    tr.write_line("calls into visionops' functions: %s" % ", ".join(
        "%s %d" % kv for kv in sorted(_STATS["calls"].items())))
    for reason, n in sorted(_STATS["deselected"].items()):
        tr.write_line("deselected %d: %s" % (n, reason))
