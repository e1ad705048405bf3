"""Times two builds of visionops against each other (a change's before and
after): the same cases as `make bench` (bench/cases.py, same inputs from the
same seed), both libraries loaded into one process (ctypes loads each with
its own symbols), each cell timed A, B, A, B... so drift and background load
hit both alike. Prints a Markdown table of medians and the B/A time ratio
(below 1: B faster).

    /usr/bin/python3 bench/before_after.py BEFORE/libvisionops.so AFTER/libvisionops.so
    ... --filter deform --dcn 16,256,7,7,256 --dcn 2,256,64,64,256   (other shapes)
"""
import argparse
import dataclasses
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cases import QUICK, Sizes, all_cases  # noqa: E402
from vo_ctypes import Lib  # noqa: E402


def interleaved_medians(fa, fb, reps):
    """Median ms of fa and fb, timed alternately after a warm-up of each."""
    fa()
    fb()
    ta, tb = [], []
    for _ in range(reps):
        for f, ts in ((fa, ta), (fb, tb)):
            t0 = time.perf_counter()
            f()
            ts.append(time.perf_counter() - t0)
    return 1000 * sorted(ta)[reps // 2], 1000 * sorted(tb)[reps // 2]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("before")
    p.add_argument("after")
    p.add_argument("--reps", type=int, default=7)
    p.add_argument("--quick", action="store_true", help="the small cases of make bench --quick")
    p.add_argument("--filter", default="", help="only ops whose name contains this")
    p.add_argument("--dcn", action="append", default=[], metavar="N,CIN,H,W,COUT",
                   help="deform_conv2d's shape instead of make bench's (repeatable)")
    opts = p.parse_args()
    sizes = QUICK if opts.quick else Sizes()
    if opts.dcn:
        cases_of = [dataclasses.replace(sizes, dcn=tuple(int(v) for v in d.split(",")))
                    for d in opts.dcn]
    else:
        cases_of = [sizes]
    libs = [Lib(opts.before), Lib(opts.after)]
    wanted = lambda op: opts.filter in op  # noqa: E731
    cases = [[c for s in cases_of for c in all_cases(vo, s, wanted)] for vo in libs]
    cores = os.cpu_count() or 1
    print("| op | case | threads | before (ms) | after (ms) | after/before |")
    print("|---|---|---|---|---|---|")
    for ca, cb in zip(*cases):
        fa, fb = ca.make("cpu")[1], cb.make("cpu")[1]
        for threads in sorted({1, cores}):
            torch.set_num_threads(threads)
            for vo in libs:
                vo.threads(threads)
            a, b = interleaved_medians(fa, fb, opts.reps)
            print("| %s | %s | %d | %.3f | %.3f | %.2f |" % (ca.op, ca.label, threads, a, b, b / a),
                  flush=True)


if __name__ == "__main__":
    main()
