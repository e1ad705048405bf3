"""Threads under load: times each visionops CPU case at 1 thread and at the
default thread count (none set on the context: all cores), with or without background CPU load (one busy process per core),
and reports per op the all-threads time against the 1-thread time. Several
builds of the library can be given: every timing round visits each build and
both thread counts once, in a shuffled order and each call after a 20 ms
pause, so the builds are compared under the same conditions (for before/after figures on a machine others are using too).
`make bench BENCH_ARGS=--load` runs it (through compare_torchvision.py) on
the build with background load.
Usage: /usr/bin/python3 bench/contention.py LIB.so [LIB2.so ...] [--load]
       [--names a,b] [--quick] [--reps N] [--filter S] [--markdown]
The target (issue 11, a benchmark, never a test): under load no op at all
threads takes more than 1.5x its 1-thread time."""
import argparse
import os
import random
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cases  # noqa: E402
from vo_ctypes import Lib  # noqa: E402

TARGET = 1.5
SETTLE_S = 0.02  # pause before each timed call
order = random.Random(11)

# The work models (greedy NMS evaluations in Python) are not needed here.
cases.greedy_evaluations = lambda *a: 0
cases.batched_evaluations = lambda *a: 0
cases.roi_work = lambda *a: (0, 0)


def tiny_cases(vo, wanted):
    """Calls too small for a second thread (issue 11: a 999x1 box_iou took
    13-40 ms at 2 threads under load against 0.2 ms at 1)."""
    if not wanted("box_iou"):
        return []
    rng = np.random.default_rng(3)
    a, b = cases.detections(rng, 999), cases.detections(rng, 1)

    def make(dev):
        t1, t2 = cases.on(dev, a, b)
        out = cases.empty(dev, (999, 1))
        return None, vo.bind("vo_box_iou", t1, t2, out)
    return [cases.Case("box_iou", "999 x 1", make)]


def start_load(count):
    """count busy processes (one per core); the caller stops them."""
    spin = "while True:\n    pass\n"
    return [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(count)]


def stop_load(procs):
    for p in procs:
        p.terminate()
    for p in procs:
        p.wait()


def timed(f):
    t0 = time.perf_counter()
    f()
    return 1000 * (time.perf_counter() - t0)


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


def measure(libs, case_lists, cores, reps, budget_s):
    """Rows of {op, label, times: [(t1, tn) per lib]}; each round times every
    lib at 1 and at the default thread count, one call each, after a warm-up
    call."""
    rows = []
    for per_lib in zip(*case_lists):
        fns = [c.make("cpu")[1] for c in per_lib]
        samples = [([], []) for _ in libs]
        for vo, f in zip(libs, fns):  # warm-up (and the first estimate)
            vo.threads(1)
            first = timed(f)
            vo.threads(0)
            f()
        per_round = len(libs) * 2 * (first + 1000 * SETTLE_S)
        n = max(3, min(reps, int(budget_s * 1000 / max(per_round, 1e-3))))
        # every (build, thread count) pair once a round, in a shuffled order,
        # each call after a pause: OpenMP's threads spin for milliseconds
        # after a region, and the call that follows one (of either build)
        # would pay for that
        combos = [(k, slot, threads) for k in range(len(libs))
                  for slot, threads in ((0, 1), (1, 0))]  # 0: the default, all threads
        for _ in range(n):
            order.shuffle(combos)
            for k, slot, threads in combos:
                libs[k].threads(threads)
                time.sleep(SETTLE_S)
                samples[k][slot].append(timed(fns[k]))
        times = [(median(a), median(b)) for a, b in samples]
        row = {"op": per_lib[0].op, "label": per_lib[0].label, "times": times, "runs": n}
        rows.append(row)
        print_row(row, cores)
    return rows


def print_row(row, cores):
    cells = "  ".join(f"1thr {t1:9.3f} {cores}thr {tn:9.3f} ({tn / t1:5.2f}x)"
                      for t1, tn in row["times"])
    print(f"{row['op']:<24} {row['label']:<36} {cells}", flush=True)


def markdown(rows, names, cores, loaded):
    head = "| op | case |" + "".join(
        f" {n} 1 thr (ms) | {n} {cores} thr (ms) | {n} {cores} thr / 1 thr |" for n in names)
    sep = "|---|---|" + "---|---|---|" * len(names)
    out = [head, sep]
    for r in rows:
        cells = "".join(
            f" {t1:.3f} | {tn:.3f} | {tn / t1:.2f}x{' **over**' if loaded and tn / t1 > TARGET else ''} |"
            for t1, tn in r["times"])
        out.append(f"| {r['op']} | {r['label']} |{cells}")
    return "\n".join(out)


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("libs", nargs="+", help="built libvisionops.so files")
    ap.add_argument("--names", default=None, help="comma-separated column names, one per lib")
    ap.add_argument("--load", action="store_true",
                    help="run with one busy process per core in the background")
    ap.add_argument("--quick", action="store_true", help="the small --quick sizes")
    ap.add_argument("--reps", type=int, default=7, help="timing rounds per case (default 7)")
    ap.add_argument("--budget", type=float, default=3.0,
                    help="seconds per case beyond which fewer rounds (at least 3) are run")
    ap.add_argument("--filter", default="", help="only ops whose name contains this")
    ap.add_argument("--markdown", action="store_true", help="also print a Markdown table")
    return ap.parse_args(argv)


def main(argv=None):
    opts = parse_args(argv)
    names = opts.names.split(",") if opts.names else [os.path.basename(os.path.dirname(
        os.path.abspath(p))) for p in opts.libs]
    if len(names) != len(opts.libs):
        sys.exit("contention: --names needs one name per library")
    libs = [Lib(p) for p in opts.libs]
    cores = os.cpu_count() or 1
    # Importing torch set OpenMP's default thread count to torch's (1 on a
    # 2-vCPU machine), and visionops' default follows OpenMP's: give it back
    # all cores, as a plain C program has them.
    cases.torch.set_num_threads(cores)
    sizes = cases.QUICK if opts.quick else cases.Sizes()
    wanted = lambda op: opts.filter in op or opts.filter in op + "_backward"
    case_lists = [[c for c in tiny_cases(vo, wanted) + cases.all_cases(vo, sizes, wanted)
                   if opts.filter in c.op] for vo in libs]
    if not case_lists[0]:
        sys.exit(f"contention: no op matches --filter {opts.filter!r}")
    load = start_load(cores) if opts.load else []
    try:
        time.sleep(0.5 if load else 0)
        print(f"contention: {cores} cores, background load: "
              f"{f'{len(load)} busy processes' if load else 'none'}; builds: {', '.join(names)}",
              flush=True)
        rows = measure(libs, case_lists, cores, opts.reps, opts.budget)
    finally:
        stop_load(load)
    if opts.markdown:
        print()
        print(markdown(rows, names, cores, bool(load)))
    if load:
        over = [f"{r['op']} ({r['label']}, {names[k]}): {tn / t1:.2f}x"
                for r in rows for k, (t1, tn) in enumerate(r["times"]) if tn / t1 > TARGET]
        print(f"\ncontention: over the {TARGET}x target under load: "
              f"{'; '.join(over) if over else 'none'}")
    return rows


if __name__ == "__main__":
    main()
