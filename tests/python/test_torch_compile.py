"""torch.compile over the registered ops (torch >= 2): the graph holds
torch.ops.visionops.* whole (fullgraph), fake tensors get their shapes from
the Meta kernels, and results and gradients equal eager mode."""
import pytest

torch = pytest.importorskip("torch")
if not hasattr(torch, "compile"):
    pytest.skip("torch.compile needs torch >= 2 (this is %s)" % torch.__version__,
                allow_module_level=True)

import visionops  # noqa: E402


def _roi_loss(x, rois):
    return visionops.roi_align(x, rois, 3, 0.5, 2, True).sin().sum()


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_compiled_roi_align_matches_eager(backend):
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(2, 4, 16, 16, generator=gen, dtype=torch.float64, requires_grad=True)
    rois = torch.tensor([[0, 1.0, 1, 19, 17], [1, 2, 2, 24, 20]], dtype=torch.float64)
    compiled = torch.compile(_roi_loss, backend=backend, fullgraph=True)
    out = compiled(x, rois)
    (grad,) = torch.autograd.grad(out, x)
    ref = _roi_loss(x, rois)
    (ref_grad,) = torch.autograd.grad(ref, x)
    assert torch.equal(out.detach(), ref.detach())
    assert torch.equal(grad, ref_grad)


def test_compiled_nms_has_static_outputs():
    gen = torch.Generator().manual_seed(1)
    xy = torch.rand(50, 2, generator=gen) * 50
    boxes = torch.cat([xy, xy + 5 + torch.rand(50, 2, generator=gen) * 20], dim=1)
    scores = torch.rand(50, generator=gen)
    compiled = torch.compile(lambda b, s: torch.ops.visionops.nms(b, s, 0.5), backend="aot_eager",
                             fullgraph=True)
    keep, num_kept = compiled(boxes, scores)
    ref_keep, ref_num = torch.ops.visionops.nms(boxes, scores, 0.5)
    assert keep.shape == (50,) and num_kept.shape == ()
    assert torch.equal(keep, ref_keep) and torch.equal(num_kept, ref_num)


def test_compiled_soft_nms_full_graph():
    """soft_nms's (dets, keep) of data-dependent size compile into one graph
    (soft_nms_kept's fake kernel), equal to eager."""
    torch.manual_seed(3)
    b = torch.rand(60, 2) * 100
    boxes = torch.cat([b, b + torch.rand(60, 2) * 40 + 1], 1)
    scores = torch.rand(60)
    idxs = torch.randint(0, 4, (60,))
    fn = lambda b, s, i: (visionops.soft_nms(b, s, 0.3, 0.5, 0.01),  # noqa: E731
                          visionops.batched_soft_nms(b, s, i, 0.3, 0.5, 0.01, "gaussian"))
    compiled = torch.compile(fn, backend="aot_eager", fullgraph=True)
    for got, want in zip(compiled(boxes, scores, idxs), fn(boxes, scores, idxs)):
        assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])
