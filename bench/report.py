"""Output of bench/compare_torchvision.py: the Markdown tables (speed ratios
against torchvision, and how close each op comes to this machine's measured
limits), their splice into bench/RESULTS.md between markers, and a
hand-written SVG bar chart of the ratios (log scale, 1x line, issue-7
targets)."""
import datetime
import math
import os
import platform
import re
from xml.sax.saxutils import escape

BEGIN, END = "<!-- bench:begin -->", "<!-- bench:end -->"

# Targets: visionops' public API vs torchvision, both given all threads.
# Issue 18's where it sets one, issue 7's (kernel-era) for the other rows.
TARGETS = {"roi_align": 15, "roi_align_fwd_bwd": 15, "roi_pool": 10, "ps_roi_align": 5,
           "ps_roi_pool": 5, "box_iou": 20, "nms": 5, "deform_conv2d": 3,
           # issue 7
           "batched_nms": 5, "roi_align_backward": 5, "roi_pool_backward": 5,
           "ps_roi_align_backward": 5, "ps_roi_pool_backward": 5, "deform_conv2d_backward": 2}


def target(op, label):
    """The target ratio of a row, or None; nms: 5x up to 5,000 boxes, 20x
    at 20,000 (issue 18)."""
    if op == "nms" and label.startswith("20,000 "):
        return 20
    return TARGETS.get(op)


def ratio(tv, vo):
    return tv / vo if tv and vo else None


def fmt_ms(t):
    if t is None:
        return "n/a"
    return f"{t:.3f}" if t < 1 else f"{t:.2f}" if t < 100 else f"{t:.1f}"


def fmt_ratio(r):
    return "n/a" if r is None else f"{r:.2f}x" if r < 10 else f"{r:.1f}x"


def fmt_si(x, unit):
    """1.23e9 -> '1.23 G' + unit."""
    for div, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if x >= div:
            return f"{x / div:.3g} {prefix}{' ' if ' ' in unit else ''}{unit}"
    return f"{x:.3g} {unit}"


# ------------------------------------------------------------ the machine

def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def memory_gib():
    try:
        with open("/proc/meminfo") as f:
            kib = int(re.search(r"MemTotal:\s+(\d+)", f.read()).group(1))
        return f", {kib / 2 ** 20:.0f} GiB RAM"
    except (OSError, AttributeError):
        return ""


def machine(cores, versions, gpu):
    gpu_text = f"; GPU: {gpu}" if gpu else "; no GPU"
    return f"{cpu_model()}, {cores} cores{memory_gib()}{gpu_text}; {versions}"


# ----------------------------------------------------------------- tables

def main_table(rows, cores, cuda):
    """visionops (public API on torch tensors) against torchvision at 1 and
    all threads, the target, then visionops on NumPy arrays and its bare
    kernel at all threads (and CUDA)."""
    head = ["op", "case", "torchvision 1 thr (ms)", "visionops 1 thr (ms)", "ratio 1 thr",
            f"torchvision {cores} thr (ms)", f"visionops {cores} thr (ms)",
            f"ratio {cores} thr", "target", f"visionops NumPy {cores} thr (ms)",
            f"kernel only {cores} thr (ms)", "kernel ratio"]
    if cuda:
        head += ["torchvision CUDA (ms)", "visionops CUDA (ms)", "ratio CUDA",
                 "kernel only CUDA (ms)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        goal = target(r["op"], r["label"])
        got = ratio(r["tv_n"], r["vo_n"])
        mark = "" if goal is None or got is None else (" met" if got >= goal else " **not met**")
        cells = [r["op"], r["label"], fmt_ms(r["tv_1"]), fmt_ms(r["vo_1"]),
                 fmt_ratio(ratio(r["tv_1"], r["vo_1"])), fmt_ms(r["tv_n"]), fmt_ms(r["vo_n"]),
                 fmt_ratio(got), "-" if goal is None else f">= {goal}x{mark}",
                 fmt_ms(r.get("np_n")) if "np_n" in r else "-", fmt_ms(r.get("k_n")),
                 fmt_ratio(ratio(r["tv_n"], r.get("k_n")))]
        if cuda:
            cells += [fmt_ms(r.get("tv_cuda")), fmt_ms(r.get("vo_cuda")),
                      fmt_ratio(ratio(r.get("tv_cuda"), r.get("vo_cuda"))),
                      fmt_ms(r.get("k_cuda"))]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def limit_cells(r, peaks):
    """Achieved bandwidth and rate of one row against the measured peaks."""
    case, seconds = r["case"], r["k_n"] / 1e3
    bw = case.bytes / seconds if case.bytes else None
    rate = case.work / seconds
    peak = {"iou": peaks.get("iou"), "flop": peaks.get("flop")}.get(case.key)
    return ["n/a" if bw is None else f"{bw / 1e9:.1f}",
            "n/a" if bw is None else f"{100 * bw / peaks['bandwidth']:.0f}%",
            fmt_si(rate, case.unit + "/s"),
            "n/a" if not peak else f"{100 * rate / peak:.0f}%"]


def limit_table(rows, cores, peaks):
    head = ["op", "case", f"kernel only {cores} thr (ms)", "compulsory MB", "GB/s",
            "% of copy bandwidth", "rate", "% of peak rate"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        if r.get("k_n") is None or not r["case"].work:
            continue
        mb = f"{r['case'].bytes / 1e6:.3g}" if r["case"].bytes else "n/a"
        cells = [r["op"], r["label"], fmt_ms(r["k_n"]), mb] + limit_cells(r, peaks)
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def peaks_text(peaks, cores):
    return (f"Measured peaks (medians): copy bandwidth {peaks['bandwidth'] / 1e9:.1f} GB/s "
            f"(read + write bytes of a {peaks['copy_mib']} MiB copy: C memmove at 1 thread "
            f"{peaks['memmove'] / 1e9:.1f} GB/s, torch copy_ at {cores} threads "
            f"{peaks['torch_copy'] / 1e9:.1f} GB/s; the larger is the peak); "
            f"dense IoU rate {fmt_si(peaks['iou'], 'IoUs/s') if peaks.get('iou') else 'n/a'} "
            f"(visionops box_iou {peaks['iou_n']}x{peaks['iou_n']}, in cache, {cores} threads); "
            f"float32 GEMM {fmt_si(peaks['flop'], 'FLOP/s')} (torch.mm "
            f"{peaks['gemm_n']}x{peaks['gemm_n']}, {cores} threads).")


FOOTNOTES = """\
How the limit table counts (a model, stated so the figures can be checked):
*compulsory MB* is the least traffic the op needs with nothing cached
between calls. Forward RoI ops: every distinct input pixel the RoIs read,
once (union over RoIs; for the position-sensitive ops one union per bin,
each bin reading its own channel), + the RoIs + the outputs (+ argmax or
channel_mapping). Backward RoI ops: read grad (+ argmax or channel_mapping)
and the RoIs, write all of grad_input. NMS: boxes and scores read, keep
written; box_iou: the N x M output written. *rate*: RoI ops count bilinear
samples (align: RoIs x output channels x bins x sampling^2) or input
elements visited (pool: RoIs x output channels x bin areas); NMS counts the
IoU evaluations of plain greedy NMS (each kept box against every later box
not yet suppressed: torchvision's algorithm), and its *% of peak rate*
compares that with the dense IoU rate; deform_conv2d counts the GEMM FLOPs
(2 x N x Cout x H x W x Cin x 9 forward, twice that backward) against the
measured GEMM rate. Achieved rates above 100% mean the op does less work
than the model (pruning, reuse in cache)."""


def block(rows, info):
    """The generated Markdown between the markers."""
    cores = info["cores"]
    lines = [BEGIN, f"Generated by `make bench` on {info['date']}.", "",
             f"Machine: {info['machine']}.", "", f"Command: `{info['command']}`", "",
             f"Medians of {info['reps_text']} after a warm-up; torchvision given 1 thread and "
             f"then all {cores} (`torch.set_num_threads`), visionops likewise "
             "(`visionops.set_num_threads`, and its context for the kernel). *visionops* is "
             "the public API as users call it on torch tensors (`visionops.roi_align(x, "
             "rois, ...)`; a backward row calls the registered "
             "`torch.ops.visionops.*_backward` that autograd runs, as torchvision's row calls "
             "its `_*_backward`; *fwd_bwd* is a forward and `.backward()` through autograd on "
             "both sides), each side allocating its outputs in torch every call; *NumPy* is "
             "the public API on NumPy arrays; *kernel only* is the C function through ctypes "
             "into outputs allocated once. ratio = torchvision time / visionops time (above "
             "1: visionops faster); targets (issue 18's, issue 7's where 18 sets none) are "
             "against the all-threads public-API ratio.", ""]
    lines += main_table(rows, cores, info["cuda"])
    if info["cuda"]:
        lines += ["", "CUDA: both timed with CUDA events on one stream after a warm-up; n/a "
                  "where visionops has no CUDA kernel for the op yet (or the call failed)."]
    lines += ["", f"![ratios]({info['svg_name']})", "", "How close to this machine's limits "
              f"(the visionops kernel at {cores} threads):", ""]
    lines += limit_table(rows, cores, info["peaks"])
    lines += ["", peaks_text(info["peaks"], cores), "", FOOTNOTES, END]
    return "\n".join(lines) + "\n"


def splice(path, text):
    """Replace what lies between the markers in `path` (appending a marked
    block if it has none, creating the file if missing)."""
    old = open(path).read() if os.path.exists(path) else ""
    if BEGIN in old and END in old:
        head, rest = old.split(BEGIN, 1)
        new = head + text.rstrip("\n") + rest.split(END, 1)[1]
    else:
        new = old + ("\n" if old else "") + text
    with open(path, "w") as f:
        f.write(new)


def today():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


# ------------------------------------------------------------------- chart

ROW_H, BAR_H, LEFT, PLOT_W, TOP = 26, 7, 380, 520, 64


def log_range(values):
    lo = min([1.0] + values)
    hi = max([10.0] + values)
    return 10 ** math.floor(math.log10(lo)), 10 ** math.ceil(math.log10(hi))


def svg_axis(lo, hi, x, height):
    out = []
    d = lo
    while d <= hi * 1.0001:
        for m in (1, 2, 5):
            v = d * m
            if v > hi * 1.0001:
                break
            major = m == 1
            out.append(f'<line x1="{x(v):.1f}" y1="{TOP - 6}" x2="{x(v):.1f}" y2="{TOP + height}" '
                       f'stroke="{"#bbb" if major else "#e4e4e4"}" stroke-width="1"/>')
            if major or m == 5:
                out.append(f'<text x="{x(v):.1f}" y="{TOP - 10}" text-anchor="middle" '
                           f'font-size="11">{v:g}x</text>')
        d *= 10
    out.append(f'<line x1="{x(1):.1f}" y1="{TOP - 6}" x2="{x(1):.1f}" y2="{TOP + height}" '
               'stroke="#000" stroke-width="1.5"/>')
    return out


def svg_row(i, r, series, x):
    y = TOP + i * ROW_H
    label = escape(f"{r['op']}  {r['label']}")
    out = [f'<text x="{LEFT - 8}" y="{y + ROW_H / 2 + 4:.1f}" text-anchor="end" '
           f'font-size="11">{label}</text>']
    for j, (_, key_tv, key_vo, color) in enumerate(series):
        v = ratio(r.get(key_tv), r.get(key_vo))
        if v is None:
            continue
        by = y + 3 + j * (BAR_H + 1)
        x0, x1 = sorted((x(1), x(v)))
        fill = color if v >= 1 else ("#f4a3a3" if j == 0 else "#d62728")
        out.append(f'<rect x="{x0:.1f}" y="{by}" width="{max(x1 - x0, 1):.1f}" '
                   f'height="{BAR_H}" fill="{fill}"><title>{v:.2f}x</title></rect>')
    goal = target(r["op"], r["label"])
    if goal:
        out.append(f'<path d="M{x(goal):.1f} {y + 1} l-4 -5 h8 z M{x(goal):.1f} {y + 1} '
                   f'v{ROW_H - 4}" stroke="#000" stroke-width="1.5" fill="#000"/>')
    return out


def svg_legend(series, width):
    out = []
    for j, (name, _, _, color) in enumerate(series):
        lx = LEFT + j * 150
        out.append(f'<rect x="{lx}" y="{TOP - 44}" width="12" height="{BAR_H + 3}" '
                   f'fill="{color}"/><text x="{lx + 16}" y="{TOP - 35}" font-size="11">'
                   f'{escape(name)}</text>')
    out.append(f'<path d="M{width - 140} {TOP - 38} l-4 -5 h8 z M{width - 140} {TOP - 38} v8" '
               f'stroke="#000" fill="#000"/><text x="{width - 130}" y="{TOP - 35}" '
               'font-size="11">target</text>')
    return out


def svg(rows, cores, cuda, title):
    """The chart as SVG text: per row, bars of torchvision time / visionops
    time from the 1x line (log scale; red where visionops is slower)."""
    series = [("1 thread each", "tv_1", "vo_1", "#9ecae1"),
              (f"{cores} threads each", "tv_n", "vo_n", "#2171b5")]
    if cuda:
        series.append(("CUDA", "tv_cuda", "vo_cuda", "#31a354"))
    values = [ratio(r.get(a), r.get(b)) for r in rows for _, a, b, _ in series]
    values = [v for v in values if v] + [t for r in rows if (t := target(r["op"], r["label"]))]
    lo, hi = log_range(values)
    x = lambda v: LEFT + PLOT_W * (math.log10(v) - math.log10(lo)) / math.log10(hi / lo)
    width, height = LEFT + PLOT_W + 30, len(rows) * ROW_H
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" '
           f'height="{TOP + height + 30}" font-family="sans-serif">',
           '<rect width="100%" height="100%" fill="#fff"/>',
           f'<text x="10" y="18" font-size="13" font-weight="bold">{escape(title)}</text>']
    out += svg_legend(series, width) + svg_axis(lo, hi, x, height)
    for i, r in enumerate(rows):
        out += svg_row(i, r, series, x)
    out.append(f'<text x="{LEFT + PLOT_W / 2}" y="{TOP + height + 20}" text-anchor="middle" '
               'font-size="11">torchvision time / visionops public-API time (log scale; '
               'right of the black line: visionops faster)</text>')
    return "\n".join(out + ["</svg>"]) + "\n"
