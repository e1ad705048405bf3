"""torch.distributed: a two-process DistributedDataParallel training step
(gloo on the CPU, rendezvous through a FileStore in a temporary directory,
gloo's sockets on the loopback interface) of a small detector built on
visionops' roi_align, deform_conv2d and generalized / distance box IoU
losses gives, on every rank, the gradients of one process on the
concatenated batch (float64)."""
import os
import time

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402

import visionops  # noqa: E402

if not (dist.is_available() and dist.is_gloo_available()):
    pytest.skip("torch.distributed with gloo is not available in this torch build",
                allow_module_level=True)

WORLD_SIZE = 2
PER_RANK = 2  # images per rank
ROIS_PER_IMAGE = 3
TIMEOUT_S = 120  # a hung worker fails the test instead of hanging the suite


class Detector(torch.nn.Module):
    """Conv features, a deformable conv whose offsets and mask a conv
    predicts, roi_align of the RoIs and a linear head giving box deltas."""

    def __init__(self):
        super().__init__()
        self.backbone = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.offset_mask = torch.nn.Conv2d(4, 3 * 9, 3, padding=1)
        self.deform_weight = torch.nn.Parameter(torch.randn(4, 4, 3, 3) * 0.2)
        self.deform_bias = torch.nn.Parameter(torch.randn(4) * 0.1)
        self.head = torch.nn.Linear(4 * 2 * 2, 4)
        with torch.no_grad():
            self.offset_mask.weight.mul_(0.1)
            self.head.weight.mul_(0.1)

    def forward(self, images, rois):
        features = torch.relu(self.backbone(images))
        offset_mask = self.offset_mask(features)
        offset, mask = offset_mask[:, :18], torch.sigmoid(offset_mask[:, 18:])
        features = visionops.deform_conv2d(features, offset, self.deform_weight,
                                           self.deform_bias, padding=(1, 1), mask=mask)
        pooled = visionops.roi_align(features, rois, (2, 2), 0.5, 2, True)
        return rois[:, 1:] + self.head(pooled.flatten(1))


def make_model():
    torch.manual_seed(0)
    return Detector().double()


def make_batch():
    """The whole batch: images, RoIs (batch_index, x1, y1, x2, y2, sorted by
    image) in image coordinates, target boxes."""
    gen = torch.Generator().manual_seed(1)
    n = WORLD_SIZE * PER_RANK
    images = torch.randn(n, 3, 8, 8, generator=gen, dtype=torch.float64)
    xy = torch.rand(n * ROIS_PER_IMAGE, 2, generator=gen, dtype=torch.float64) * 8
    wh = 2 + torch.rand(n * ROIS_PER_IMAGE, 2, generator=gen, dtype=torch.float64) * 6
    index = torch.arange(n, dtype=torch.float64).repeat_interleave(ROIS_PER_IMAGE)[:, None]
    rois = torch.cat([index, xy, xy + wh], 1)
    targets = rois[:, 1:] + torch.randn(n * ROIS_PER_IMAGE, 4, generator=gen,
                                        dtype=torch.float64) * 0.5
    return images, rois, targets


def shard(rank):
    """Rank `rank`'s images, with its RoIs' batch indices local to them."""
    images, rois, targets = make_batch()
    lo, hi = rank * PER_RANK, (rank + 1) * PER_RANK
    keep = (rois[:, 0] >= lo) & (rois[:, 0] < hi)
    rois = rois[keep].clone()
    rois[:, 0] -= lo
    return images[lo:hi], rois, targets[keep]


def loss_fn(boxes, targets):
    """Mean over boxes of the generalized and the distance IoU losses of
    each box with its target (a mean per sample, so DDP's gradient average
    over equal shards is the gradient on the whole batch)."""
    giou = torch.diagonal(visionops.generalized_box_iou(boxes, targets))
    diou = torch.diagonal(visionops.distance_box_iou(boxes, targets))
    return ((1 - giou) + (1 - diou)).mean()


def gradients(model, images, rois, targets):
    model.zero_grad()
    loss_fn(model(images, rois), targets).backward()
    return [p.grad.detach().clone() for p in model.parameters()]


def train_step_worker(rank, world_size, init_file, out_dir):
    """One DDP training step on this rank's shard; saves the gradients."""
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="file://" + init_file, rank=rank,
                            world_size=world_size)
    try:
        model = torch.nn.parallel.DistributedDataParallel(make_model())
        grads = gradients(model, *shard(rank))
        torch.save(grads, os.path.join(out_dir, "grads%d.pt" % rank))
        dist.barrier()
    finally:
        dist.destroy_process_group()


def _spawn(tmp_path, monkeypatch):
    # the workers import this module and visionops from the same places
    paths = [os.path.dirname(os.path.dirname(visionops.__file__)), os.path.dirname(__file__)]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        paths + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    monkeypatch.setenv("VISIONOPS_MIN_THREAD_NS", os.environ.get("VISIONOPS_MIN_THREAD_NS", "0"))
    monkeypatch.setenv("GLOO_SOCKET_IFNAME", "lo")  # gloo's sockets stay on the loopback
    context = mp.spawn(train_step_worker, args=(WORLD_SIZE, str(tmp_path / "store"),
                                                str(tmp_path)),
                       nprocs=WORLD_SIZE, join=False)
    deadline = time.monotonic() + TIMEOUT_S
    while not context.join(timeout=1):
        if time.monotonic() > deadline:
            for process in context.processes:
                if process.is_alive():
                    process.terminate()
            pytest.fail("the DDP workers did not finish within %d s" % TIMEOUT_S)


def test_ddp_gradients_equal_single_process_on_the_whole_batch(tmp_path, monkeypatch):
    _spawn(tmp_path, monkeypatch)
    expected = gradients(make_model(), *make_batch())
    for rank in range(WORLD_SIZE):
        got = torch.load(str(tmp_path / ("grads%d.pt" % rank)))
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            assert torch.allclose(g, e, rtol=1e-10, atol=1e-13)
    # the step exercises every op's gradient: none of the parameters is idle
    assert all(e.abs().sum() > 0 for e in expected)
    # and the ranks' own shards alone give other gradients: the average matters
    local = gradients(make_model(), *shard(0))
    assert not any(torch.allclose(g, e, rtol=1e-6) for g, e in zip(local, expected))


def test_shards_cover_the_batch():
    """The per-rank shards are the whole batch (the premise of the test)."""
    images, rois, targets = make_batch()
    parts = [shard(rank) for rank in range(WORLD_SIZE)]
    assert torch.equal(torch.cat([p[0] for p in parts]), images)
    assert torch.equal(torch.cat([p[2] for p in parts]), targets)
    offset = [p[1] + torch.tensor([[r * PER_RANK, 0, 0, 0, 0.0]]) for r, p in enumerate(parts)]
    assert torch.equal(torch.cat(offset), rois)
