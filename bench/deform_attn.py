"""deform_attn (multi-scale deformable attention) on the CPU against the
grid_sample composition mmcv and Deformable DETR run where they have no
kernel (multi_scale_deformable_attn_pytorch / ms_deform_attn_core_pytorch,
restated here from SPEC-NEXT 5.3), in the same process on the same inputs,
through the public API (torch.ops.visionops.deform_attn and its backward as
autograd calls them; visionops.deform_attn where the package has it).

Cases (issue 16): a Deformable-DETR encoder on an 800x1088 image (4 levels
at strides 8-64: 100x136, 50x68, 25x34, 13x17; N=2, M=8 heads, D=32, P=4,
Q = S = 18,071 queries) and its decoder (Q = 300). Sampling locations as the
model makes them: a reference point per query (the encoder's own pixel
centre, the decoder's anywhere in the image) plus offsets of a few pixels of
each level; attention weights a softmax over the L*P samples.

Reports medians at 1 and all threads, forward and backward (visionops'
_deform_attn_backward, which autograd calls; the composition's backward is
torch autograd over its retained graph), each round timing the four calls
once in turn so that both sides see the same machine, the
ratio, and visionops' achieved bandwidth on the compulsory traffic (every
input read once, every output written once) against a measured copy rate
(the larger of a C memmove and torch copy_ of 256 MiB, read + write bytes).
`--load` adds one busy process per core.
Usage: PYTHONPATH=<build>/python python bench/deform_attn.py [--quick] [--load] [--blocks]
"""
import ctypes

import numpy as np
import torch
import torch.nn.functional as F

import visionops  # noqa: F401  (registers torch.ops.visionops)
from timing import busy, interleaved, median_ms, options  # bench/timing.py

LEVELS = ((100, 136), (50, 68), (25, 34), (13, 17))


def make_case(queries, n=2, heads=8, channels=32, points=4, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    shapes = torch.tensor(LEVELS, dtype=torch.int64)
    areas = shapes[:, 0] * shapes[:, 1]
    starts = torch.cat([areas.new_zeros(1), areas.cumsum(0)[:-1]])
    keys = int(areas.sum())
    levels = len(LEVELS)
    value = torch.randn(n, keys, heads, channels, generator=g, dtype=dtype)
    if queries is None:  # encoder: every pixel of every level is a query
        refs = []
        for h, w in LEVELS:
            ys, xs = torch.meshgrid((torch.arange(h, dtype=dtype) + 0.5) / h,
                                    (torch.arange(w, dtype=dtype) + 0.5) / w, indexing="ij")
            refs.append(torch.stack([xs.reshape(-1), ys.reshape(-1)], -1))
        ref = torch.cat(refs).expand(n, -1, -1)
        queries = keys
    else:
        ref = torch.rand(n, queries, 2, generator=g, dtype=dtype)
    wh = shapes.flip(-1).to(dtype)  # (W, H) per level
    offsets = 2 * torch.randn(n, queries, heads, levels, points, 2, generator=g, dtype=dtype)
    loc = ref[:, :, None, None, None, :] + offsets / wh[None, None, None, :, None, :]
    attn = torch.randn(n, queries, heads, levels * points, generator=g, dtype=dtype)
    attn = attn.softmax(-1).view(n, queries, heads, levels, points)
    return value, shapes, starts, loc.contiguous(), attn.contiguous()


def composition(value, shapes, starts, loc, attn):
    """The grid_sample statement of the op (SPEC-NEXT 5.3)."""
    n, _, heads, channels = value.shape
    _, queries, _, levels, points, _ = loc.shape
    per_level = value.split([int(h * w) for h, w in shapes.tolist()], dim=1)
    grids = 2 * loc - 1
    sampled = []
    for l, (h, w) in enumerate(shapes.tolist()):
        v = per_level[l].flatten(2).transpose(1, 2).reshape(n * heads, channels, h, w)
        g = grids[:, :, :, l].transpose(1, 2).flatten(0, 1)
        sampled.append(F.grid_sample(v, g, mode="bilinear", padding_mode="zeros",
                                     align_corners=False))
    a = attn.transpose(1, 2).reshape(n * heads, 1, queries, levels * points)
    out = (torch.stack(sampled, dim=-2).flatten(-2) * a).sum(-1)
    return out.view(n, heads * channels, queries).transpose(1, 2).contiguous()


def visionops_forward(value, shapes, starts, loc, attn):
    fn = getattr(visionops, "deform_attn", None)
    if fn is not None:
        return fn(value, shapes, starts, loc, attn)
    return torch.ops.visionops.deform_attn(value, shapes, starts, loc, attn, 64)


def retained(forward, args):
    """The leaves (value, sampling_loc, attn_weight) and output of a forward
    whose graph autograd keeps, so its backward can be timed alone."""
    value, shapes, starts, loc, attn = args
    leaves = [t.detach().clone().requires_grad_() for t in (value, loc, attn)]
    return leaves, forward(leaves[0], shapes, starts, leaves[1], leaves[2])


def copy_rate(mib=256, reps=5):
    size = mib << 20
    a, b = np.ones(size, np.uint8), np.zeros(size, np.uint8)
    memmove = median_ms(lambda: ctypes.memmove(b.ctypes.data, a.ctypes.data, size), reps)
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    torch_copy = median_ms(lambda: tb.copy_(ta), reps)
    return 2 * size / (min(memmove, torch_copy) / 1e3)


def nbytes(*ts):
    return sum(t.numel() * t.element_size() for t in ts)


def main():
    opts, cores, reps = options(__doc__, 7, 3, blocks=True)
    load = busy(cores) if opts.load else []
    try:
        rows = []
        for name, queries in (("encoder", None), ("decoder", 300)):
            value, shapes, starts, loc, attn = make_case(queries)
            args = (value, shapes, starts, loc, attn)
            out = visionops_forward(*args)
            ref = composition(*args)
            err = (out - ref).abs().max().item()
            grad = torch.randn_like(out)
            fwd_bytes = nbytes(value, loc, attn, out)
            bwd_bytes = nbytes(value, loc, attn, grad) * 2 - nbytes(grad)  # + the 3 gradients
            for threads in sorted({1, cores}):
                torch.set_num_threads(threads)
                visionops.set_num_threads(threads)
                rate = copy_rate(reps=3)
                vo_bwd = lambda: torch.ops.visionops._deform_attn_backward(  # noqa: E731
                    value, shapes, starts, loc, attn, grad, 64)
                cb_leaves, cb_out = retained(composition, args)
                timed = {
                    "vf": lambda: visionops_forward(*args),
                    "cf": lambda: composition(*args),
                    "vb": vo_bwd,
                    "cb": lambda: torch.autograd.grad(cb_out, cb_leaves, grad, retain_graph=True),
                }
                t = interleaved(timed, reps, opts.blocks)
                rows.append((name, threads, t["vf"], t["cf"], t["vb"], t["cb"],
                             100 * fwd_bytes / (t["vf"] / 1e3) / rate,
                             100 * bwd_bytes / (t["vb"] / 1e3) / rate, err))
        torch.set_num_threads(cores)
        visionops.set_num_threads(0)
    finally:
        for p in load:
            p.kill()
    print(f"deform_attn on the CPU, {cores} cores, torch {torch.__version__}, float32, "
          f"background load: {f'{len(load)} busy processes' if load else 'none'}, "
          f"{'back to back' if opts.blocks else 'interleaved rounds'}, {reps} reps")
    print("| case | threads | visionops fwd | composition fwd | ratio | visionops bwd | "
          "composition bwd | ratio | fwd % copy bw | bwd % copy bw | max abs diff |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, t, vf, cf, vb, cb, pf, pb, err in rows:
        print(f"| {name} | {t} | {vf:.1f} ms | {cf:.1f} ms | {cf / vf:.1f}x | {vb:.1f} ms | "
              f"{cb:.1f} ms | {cb / vb:.1f}x | {pf:.0f}% | {pb:.0f}% | {err:.1e} |")


if __name__ == "__main__":
    main()
