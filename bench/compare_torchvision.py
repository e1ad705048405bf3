"""`make bench`: times visionops and torchvision on the same inputs in one
process, op by op (forward and backward), at 1 thread and at all threads (and
on CUDA where both have it), prints the tables, writes them into
bench/RESULTS.md between the bench:begin/end markers and draws
bench/ratios.svg. visionops is timed through its public API as users call it
(torch tensors in, its outputs allocated in torch each call: the headline
ratios), on NumPy arrays, and as the bare C kernel through ctypes on the built
shared library with outputs allocated once (bench/cases.py).
Usage: /usr/bin/python3 bench/compare_torchvision.py build/libvisionops.so
       [--quick] [--reps N] [--budget S] [--filter S] [--out FILE.md] [--svg FILE.svg]
       [--no-write] [--load]
--load: threads under load instead (bench/contention.py): visionops alone at
1 thread and at all threads with one busy process per core in the
background; prints its table and writes nothing.
A benchmark, never a test: nothing here fails on speed."""
import argparse
import ctypes
import os
import sys
import time

import numpy as np
import torch
import torchvision


def _put_package_on_path():
    """The visionops package staged beside the library (<build>/python),
    found before any installed copy."""
    lib = next((a for a in sys.argv[1:] if a.endswith(".so")), None)
    if lib:
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(lib)), "python"))


_put_package_on_path()
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import visionops  # noqa: E402
import cases  # noqa: E402
import report  # noqa: E402
from vo_ctypes import Lib  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


# ----------------------------------------------------------------- timing

def median_ms(f, reps, budget_s, min_reps):
    """Median ms of up to `reps` runs after a warm-up; fewer (not under
    min_reps) when the warm-up says they would take over budget_s."""
    # warm-up: calls until 20 ms have passed (at most 50): a sub-millisecond
    # call's first few run several times slower (caches, branch predictors,
    # clock), which one warm-up call left in the median
    start = time.perf_counter()
    for _ in range(50):
        t0 = time.perf_counter()
        f()
        first = time.perf_counter() - t0
        if t0 + first - start >= 0.02:
            break
    n = max(min_reps, min(reps, int(budget_s / max(first, 1e-9))))
    ts = []
    for _ in range(n):
        t0 = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t0)
    return 1000 * sorted(ts)[len(ts) // 2]


def cuda_median_ms(f, reps):
    """Median ms between CUDA events around f on the current stream."""
    f()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        f()
        end.record()
        end.synchronize()
        ts.append(start.elapsed_time(end))
    return sorted(ts)[len(ts) // 2]


def guarded(what, f):
    """f() or None (with the reason on stderr) if it raises."""
    try:
        return f()
    except Exception as e:  # a missing CUDA kernel must not stop the CPU run
        print(f"  {what}: n/a ({str(e).splitlines()[0][:160]})", file=sys.stderr)
        return None


# ------------------------------------------------------------------ peaks

def copy_peaks(mib, reps):
    """(memmove at 1 thread, torch copy_ at all threads) in bytes/s, counting
    the bytes read and written."""
    a = np.ones(mib << 20, np.uint8)
    b = np.empty_like(a)
    size = a.nbytes
    memmove = median_ms(lambda: ctypes.memmove(b.ctypes.data, a.ctypes.data, size), reps, 10, 3)
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    torch_copy = median_ms(lambda: tb.copy_(ta), reps, 10, 3)
    return 2 * size / (memmove / 1e3), 2 * size / (torch_copy / 1e3)


def iou_peak(vo, n, reps):
    """visionops' box_iou rate (IoUs/s) on an in-cache n x n problem."""
    rng = np.random.default_rng(5)
    a, b = (torch.from_numpy(cases.detections(rng, n)) for _ in range(2))
    out = torch.empty((n, n))
    return n * n / (median_ms(vo.bind("vo_box_iou", a, b, out), reps, 5, 3) / 1e3)


def gemm_peak(n, reps):
    a, b = torch.rand(n, n), torch.rand(n, n)
    c = torch.empty(n, n)
    return 2.0 * n ** 3 / (median_ms(lambda: torch.mm(a, b, out=c), reps, 5, 3) / 1e3)


def measure_peaks(vo, cores, quick):
    torch.set_num_threads(cores)
    vo.threads(cores)
    mib, reps = (64, 3) if quick else (256, 7)
    memmove, torch_copy = copy_peaks(mib, reps)
    peaks = {"memmove": memmove, "torch_copy": torch_copy, "bandwidth": max(memmove, torch_copy),
             "copy_mib": mib, "iou_n": 1000, "gemm_n": 1024 if quick else 2048}
    peaks["iou"] = guarded("box_iou peak", lambda: iou_peak(vo, peaks["iou_n"], reps))
    peaks["flop"] = gemm_peak(peaks["gemm_n"], reps)
    return peaks


# ------------------------------------------------------------------- runs

def time_cpu(case, cores, vo, opts):
    """{tv_1, vo_1, k_1, tv_n, vo_n, k_n, np_n} of one case: torchvision,
    visionops' public API on torch tensors, its bare kernel, and (all threads)
    its public API on NumPy arrays."""
    tv, kernel, api = case.make("cpu")
    numpy_api = case.numpy() if case.numpy else None
    row = {}
    timed = lambda f: median_ms(f, opts.reps, opts.budget, opts.min_reps)
    for threads, tag in ((1, "1"), (cores, "n")):
        torch.set_num_threads(threads)
        vo.threads(threads)
        visionops.set_num_threads(threads)
        row["tv_" + tag] = timed(tv)
        row["vo_" + tag] = timed(api)
        row["k_" + tag] = timed(kernel)
    if numpy_api is not None:
        row["np_n"] = timed(numpy_api)
    return row


def time_cuda_pair(case, reps):
    """{tv_cuda, vo_cuda, k_cuda} (torchvision, visionops' public API, its
    kernel) on the current stream; None where a side fails."""
    made = guarded(f"{case.op} CUDA inputs", lambda: case.make("cuda"))
    if made is None:
        return {}
    tv, kernel, api = made
    return {"tv_cuda": guarded(f"torchvision CUDA {case.op}", lambda: cuda_median_ms(tv, reps)),
            "vo_cuda": guarded(f"visionops CUDA {case.op}", lambda: cuda_median_ms(api, reps)),
            "k_cuda": guarded(f"visionops CUDA kernel {case.op}",
                              lambda: cuda_median_ms(kernel, reps))}


def time_cuda(case, opts, stream):
    """CUDA cells of one case on the stream visionops' CUDA context uses;
    n/a where visionops has no CUDA kernel for the op yet."""
    with torch.cuda.stream(stream):
        row = time_cuda_pair(case, opts.reps)
    torch.cuda.empty_cache()
    return row


def setup_cuda(vo):
    """A torch stream that visionops' CUDA context also uses, or None
    without a GPU or without the library's CUDA backend."""
    if not torch.cuda.is_available():
        return None
    if not vo.cuda_available():
        print("bench: torch sees a GPU but this visionops build has no usable CUDA backend: "
              f"{vo.backends().get('cuda', (False, 'not built'))[1]}", file=sys.stderr)
        return None
    stream = guarded("CUDA stream", torch.cuda.Stream)
    if stream is None or guarded("visionops CUDA stream",
                                 lambda: vo.use_cuda_stream(stream.cuda_stream) or True) is None:
        return None
    return stream


def print_row(r, cores):
    rat = lambda a, b: report.fmt_ratio(report.ratio(r.get(a), r.get(b)))
    line = (f"{r['op']:<24} {r['label']:<34} tv1 {report.fmt_ms(r['tv_1']):>8} "
            f"vo1 {report.fmt_ms(r['vo_1']):>8} {rat('tv_1', 'vo_1'):>7}   "
            f"tv{cores} {report.fmt_ms(r['tv_n']):>8} vo{cores} {report.fmt_ms(r['vo_n']):>8} "
            f"{rat('tv_n', 'vo_n'):>7}   numpy {report.fmt_ms(r.get('np_n')):>8} "
            f"kernel {report.fmt_ms(r.get('k_n')):>8} {rat('tv_n', 'k_n'):>7}")
    if "tv_cuda" in r or "vo_cuda" in r:
        line += (f"   cuda tv {report.fmt_ms(r.get('tv_cuda')):>8} "
                 f"vo {report.fmt_ms(r.get('vo_cuda')):>8} {rat('tv_cuda', 'vo_cuda'):>7}")
    print(line, flush=True)


def run(vo, opts, cores, stream):
    sizes = cases.QUICK if opts.quick else cases.Sizes()
    wanted = lambda op: opts.filter in op or opts.filter in op + "_backward"
    rows = []
    for case in cases.all_cases(vo, sizes, wanted):
        if opts.filter not in case.op:
            continue
        row = {"op": case.op, "label": case.label, "case": case}
        row.update(time_cpu(case, cores, vo, opts))
        if stream is not None:
            row.update(time_cuda(case, opts, stream))
        print_row(row, cores)
        rows.append(row)
    return rows


# ------------------------------------------------------------------- main

def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("lib", help="path of the built libvisionops.so")
    ap.add_argument("--quick", action="store_true",
                    help="small cases (100 RoIs, small deform_conv2d), 1 run each: a smoke test")
    ap.add_argument("--reps", type=int, default=None, help="timed runs per cell (default 7)")
    ap.add_argument("--budget", type=float, default=None,
                    help="seconds per cell beyond which fewer runs (at least 3) are taken")
    ap.add_argument("--filter", default="", help="only ops whose name contains this")
    ap.add_argument("--out", default=None,
                    help="Markdown file whose bench:begin/end block is replaced (default "
                    "bench/RESULTS.md; with --quick, bench-quick/RESULTS.md next to the library, "
                    "so smoke runs never overwrite the recorded figures)")
    ap.add_argument("--svg", default=None, help="chart path (default: ratios.svg next to --out)")
    ap.add_argument("--no-write", action="store_true", help="print only")
    ap.add_argument("--load", action="store_true",
                    help="time visionops at 1 and all threads under background CPU load "
                    "(bench/contention.py) instead of the comparison")
    opts = ap.parse_args()
    opts.reps = opts.reps or (1 if opts.quick else 7)
    opts.budget = opts.budget or (1.0 if opts.quick else 4.0)
    opts.min_reps = min(opts.reps, 1 if opts.quick else 3)
    quick_dir = os.path.join(os.path.dirname(os.path.abspath(opts.lib)), "bench-quick")
    opts.out = opts.out or (os.path.join(quick_dir, "RESULTS.md") if opts.quick
                            else os.path.join(HERE, "RESULTS.md"))
    opts.svg = opts.svg or os.path.join(os.path.dirname(os.path.abspath(opts.out)), "ratios.svg")
    return opts


def write_outputs(rows, opts, cores, vo, peaks, stream):
    gpu = torch.cuda.get_device_name() if stream is not None else None
    versions = (f"visionops {vo.version()}, torch {torch.__version__}, "
                f"torchvision {torchvision.__version__}")
    reps = (f"up to {opts.reps} timed runs per cell (fewer, but at least {opts.min_reps}, "
            f"where they would take over {opts.budget:g} s)")
    info = {"date": report.today(), "machine": report.machine(cores, versions, gpu),
            "command": " ".join([sys.executable] + sys.argv), "cores": cores,
            "cuda": stream is not None, "peaks": peaks, "reps_text": reps,
            "svg_name": os.path.relpath(opts.svg, os.path.dirname(os.path.abspath(opts.out)))}
    text = report.block(rows, info)
    print("\n" + text)
    if opts.no_write:
        return
    os.makedirs(os.path.dirname(os.path.abspath(opts.out)), exist_ok=True)
    report.splice(opts.out, text)
    title = f"visionops vs torchvision, {report.cpu_model()} ({cores} cores), {info['date']}"
    with open(opts.svg, "w") as f:
        f.write(report.svg(rows, cores, stream is not None, title))
    print(f"bench: wrote {opts.out} and {opts.svg}")


def main():
    opts = parse_args()
    if opts.load:
        import contention
        contention.main([opts.lib, "--load", "--markdown", "--reps", str(opts.reps)]
                        + (["--quick"] if opts.quick else [])
                        + (["--filter", opts.filter] if opts.filter else []))
        return
    vo = Lib(opts.lib)
    cores = os.cpu_count() or 1
    stream = setup_cuda(vo)
    print(f"bench: {cores} threads; CUDA columns: {'yes' if stream is not None else 'no'}; "
          f"{'quick sizes, ' if opts.quick else ''}up to {opts.reps} runs per cell", flush=True)
    peaks = measure_peaks(vo, cores, opts.quick)
    rows = run(vo, opts, cores, stream)
    if not rows:
        sys.exit(f"bench: no op matches --filter {opts.filter!r}")
    write_outputs(rows, opts, cores, vo, peaks, stream)


if __name__ == "__main__":
    main()
