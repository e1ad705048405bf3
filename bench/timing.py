"""The timing helpers of the op benchmarks run as scripts (bench/<op>.py):
their common options, medians of calls back to back or in interleaved
rounds, and busy processes for the background-load runs."""
import argparse
import os
import statistics
import subprocess
import sys
import time


def median_ms(fn, reps):
    """Median milliseconds of `reps` calls of fn back to back, after one."""
    fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return 1e3 * statistics.median(times)


def interleaved(fns, reps, blocks=False):
    """Median milliseconds of each function, timed in rounds that visit
    every function once (after one warm-up call each), so that both sides
    share the machine's conditions and each call starts with the caches the
    other side left (as between a model's layers); with `blocks`, each
    function's calls back to back instead (warm caches)."""
    if blocks:
        return {k: median_ms(fn, reps) for k, fn in fns.items()}
    times = {k: [] for k in fns}
    for fn in fns.values():
        fn()
    for _ in range(reps):
        for k, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t0)
    return {k: 1e3 * statistics.median(v) for k, v in times.items()}


def opencl_queue():
    """A pyopencl queue on the first OpenCL device (pyopencl imported here:
    only the scripts' --opencl modes need it)."""
    import pyopencl as cl

    return cl.CommandQueue(cl.create_some_context(interactive=False))


def finished(queue, fn):
    """fn, then waiting for queue: a timed call that includes the device's
    work."""
    def call():
        out = fn()
        queue.finish()
        return out
    return call


def busy(count):
    """`count` processes spinning on a core each (kill them when done)."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


def options(doc, reps, quick_reps, blocks=False, flags=()):
    """The scripts' options (--quick, --load, --reps, --blocks where the
    script times back to back too, and the script's own on/off `flags`,
    (name, help) pairs), parsed: (opts, cores, repetitions)."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer repetitions")
    ap.add_argument("--load", action="store_true", help="one busy process per core")
    ap.add_argument("--reps", type=int, default=0)
    if blocks:
        ap.add_argument("--blocks", action="store_true",
                        help="time each call back to back (warm caches) instead of in rounds")
    for name, text in flags:
        ap.add_argument(name, action="store_true", help=text)
    opts = ap.parse_args()
    return opts, os.cpu_count() or 1, opts.reps or (quick_reps if opts.quick else reps)
