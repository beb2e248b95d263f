#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""make bench's report: the side-by-side table and the scaling plot.

Usage: report.py ROUNDS_TSV OUTDIR [META_FILE]

ROUNDS_TSV has one line per round, side and case: "round side case ns", side
"module" or "upstream", ns the median of the runs inside that round
(tools/bench.sh collects them from the VMs' "case" lines). For each case this
prints and writes to OUTDIR:
  - the median over rounds per side;
  - the ratio module/upstream: the median of the per-round ratios (round r of
    the module against round r of upstream, which ran right after it);
  - the spread: the lowest and highest per-round ratio.
results.txt (META_FILE's lines, then the table), results.md (the same table in
Markdown), results.tsv (machine-readable) and scaling.svg (REG/UNREG against N,
the fan-out, one writer against two), drawn with the standard library only.
"""

import collections
import math
import os
import statistics
import sys

SIZES = ("16", "256", "4096")

# (case, label), grouped under headings, in table order. Cases the rounds have
# but this list lacks are listed last under "other".
GROUPS = [
    ("Controls: kernel code both sides share", [
        ("null", "write() to /dev/null, 16 B: the syscall floor"),
    ] + [(f"marker_{s}_on", f"trace_marker, {s} B") for s in SIZES]
      + [(f"marker_{s}_off", f"trace_marker, {s} B, tracing_on 0") for s in SIZES]),
    ("Enabled in ftrace: writev() of [index][payload], one field", [
        (f"ftrace_{s}_on", f"{s} B") for s in SIZES
    ] + [(f"ftrace_{s}_off", f"{s} B, tracing_on 0") for s in SIZES] + [
        ("eventpipe", ".NET EventPipe shape: 8 iovecs, 2 __rel_loc fields, 95 B"),
    ]),
    ("Other consumers, 16 B", [
        ("perf_read", "perf sample, ring read by the writer"),
        ("perf_overwrite", "perf sample, ring in overwrite mode"),
        ("bpf", "BPF program on a perf event (upstream never runs it)"),
    ]),
    ("Nobody listening", [
        ("disabled_check", "instrumented client: enable-word load + branch, no syscall"),
        ("disabled_ebadf", "client skipping the check: writev() -> EBADF"),
        ("unregistered", "unregistered index: writev() -> ENOENT"),
    ]),
    ("REG/UNREG by another process while one process holds N events", [
        (f"events{n}_{k}", f"N={n}: {label}")
        for n in ("10", "1000", "10000")
        for k, label in (("reg", "REG"), ("unreg", "UNREG"),
                         ("reg_new", "REG creating a new event"),
                         # scale_bench: several holders below N=1000, one from there.
                         ("create", "holders' REGs creating the N (mean; median of the runs)"
                          if n == "10" else "holder's REGs creating the N (mean)"),
                         ("exit", "holder's exit until its N events are deleted"))
    ]),
    ("REG/UNREG while one process holds N enablers of one event", [
        (f"enablers{n}_{k}", f"N={n}: {label}")
        for n in ("10", "1000", "10000", "100000")
        for k, label in (("reg", "REG, another process"), ("unreg", "UNREG, another process"),
                         ("reg_own", "REG, the holder itself"),
                         ("unreg_own", "UNREG, the holder itself"),
                         ("fork", "the holder's fork(), until it returns"),
                         ("fork_reg", "the same fork, until the child's first REG returned"),
                         ("exit", "holder's exit until the event is deleted"))
    ]),
    ("Enable fan-out: ftrace enable + disable of an event with 1,000 enablers", [
        ("fanout1x1000", "1 process x 1,000 enablers"),
        ("fanout10x100", "10 processes x 100 enablers"),
        ("fanout100x10", "100 processes x 10 enablers"),
    ]),
    ("Scaling: W processes on W CPUs, 16 B each; time per call of one process", [
        (f"writers{w}_{k}", f"{w} writer{'s' if w > 1 else ''}, {label}")
        for k, label in (("null", "/dev/null"), ("marker", "trace_marker"),
                         ("ftrace", "user event in ftrace"))
        for w in (1, 2)
    ]),
]


def fmt_ns(ns):
    if ns is None:
        return "-"
    if ns < 1e3:
        return f"{ns:.1f} ns"
    if ns < 1e6:
        return f"{ns / 1e3:.2f} µs"
    if ns < 1e9:
        return f"{ns / 1e6:.2f} ms"
    return f"{ns / 1e9:.2f} s"


def read_rounds(path):
    """{case: {side: {round: ns}}}"""
    data = collections.defaultdict(lambda: collections.defaultdict(dict))
    with open(path, encoding="utf-8") as f:
        for line in f:
            parts = line.split()
            if len(parts) != 4:
                continue
            rnd, side, case, ns = parts
            data[case][side][int(rnd)] = float(ns)
    return data


def summarize(data):
    """[(heading, [(case, label, m_med, u_med, ratio, rmin, rmax, rounds)])]"""
    known = {c for _, cases in GROUPS for c, _ in cases}
    groups = GROUPS + [("Other", [(c, c) for c in sorted(data) if c not in known])]
    out = []
    for heading, cases in groups:
        rows = []
        for case, label in cases:
            if case not in data:
                continue
            m, u = data[case].get("module", {}), data[case].get("upstream", {})
            m_med = statistics.median(m.values()) if m else None
            u_med = statistics.median(u.values()) if u else None
            ratios = [m[r] / u[r] for r in m if r in u and u[r] > 0]
            ratio = statistics.median(ratios) if ratios else None
            rows.append((case, label, m_med, u_med, ratio,
                         min(ratios) if ratios else None,
                         max(ratios) if ratios else None, len(ratios)))
        if rows:
            out.append((heading, rows))
    return out


def fmt_ratio(r):
    return "-" if r is None else f"{r:.2f}"


def text_table(summary):
    head = ("case", "module", "upstream", "module/upstream", "spread")
    cells = {heading: [(f"  {label}", fmt_ns(m), fmt_ns(u), fmt_ratio(r),
                        f"{fmt_ratio(lo)}-{fmt_ratio(hi)}")
                       for _, label, m, u, r, lo, hi, _ in rows]
             for heading, rows in summary}
    every = [head] + [c for rows in cells.values() for c in rows]
    widths = [max(len(c[i]) for c in every) for i in range(5)]

    def line(c):
        return "  ".join(x.ljust(widths[i]) if i == 0 else x.rjust(widths[i])
                         for i, x in enumerate(c)).rstrip()

    lines = ["", line(head)]
    for heading, _ in summary:
        lines.append(heading)
        lines.extend(line(c) for c in cells[heading])
    return "\n".join(lines) + "\n"


def md_table(summary):
    lines = ["| case | module | upstream | module/upstream | spread (per-round ratios) |",
             "|---|---:|---:|---:|---:|"]
    for heading, rows in summary:
        lines.append(f"| **{heading}** | | | | |")
        for _, label, m, u, r, lo, hi, _ in rows:
            lines.append(f"| {label} | {fmt_ns(m)} | {fmt_ns(u)} | "
                         f"**{fmt_ratio(r)}** | {fmt_ratio(lo)}–{fmt_ratio(hi)} |")
    return "\n".join(lines) + "\n"


def tsv(summary):
    lines = ["case\tmodule_ns\tupstream_ns\tratio\tratio_min\tratio_max\trounds"]
    for _, rows in summary:
        for case, _, m, u, r, lo, hi, n in rows:
            vals = [case] + ["" if v is None else f"{v:.4g}" for v in (m, u, r, lo, hi)]
            lines.append("\t".join(vals + [str(n)]))
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------
# The plot: four panels of one SVG, drawn by hand.
# ---------------------------------------------------------------------------

COLORS = {"module": "#1f5fa8", "upstream": "#d9661f"}
LIGHT = {"module": "#8fb3dc", "upstream": "#f0b48c"}


def esc(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def nice_max(v):
    """A round axis maximum at or above v, and its tick step."""
    if v <= 0:
        return 1.0, 0.2
    mag = 10 ** math.floor(math.log10(v))
    for m in (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10):
        if m * mag >= v:
            top = m * mag
            break
    step = top / 5
    return top, step


class Panel:
    """One chart: a plot area at (x, y) of w by h pixels, with axes and labels."""

    def __init__(self, svg, x, y, w, h, title, ylabel):
        self.svg, self.x, self.y, self.w, self.h = svg, x, y, w, h
        svg.append(f'<text x="{x + w / 2}" y="{y - 14}" text-anchor="middle" '
                   f'font-weight="bold">{esc(title)}</text>')
        svg.append(f'<text transform="translate({x - 52},{y + h / 2}) rotate(-90)" '
                   f'text-anchor="middle">{esc(ylabel)}</text>')

    def y_axis(self, top, step, scale, unit_fmt):
        self.top, self.scale = top, scale
        svg = self.svg
        v = 0.0
        while v <= top * 1.0001:
            py = self.py(v)
            svg.append(f'<line x1="{self.x}" y1="{py:.1f}" x2="{self.x + self.w}" y2="{py:.1f}" '
                       f'stroke="#ddd"/>')
            svg.append(f'<text x="{self.x - 6}" y="{py + 4:.1f}" text-anchor="end">'
                       f'{unit_fmt(v)}</text>')
            v += step
        svg.append(f'<rect x="{self.x}" y="{self.y}" width="{self.w}" height="{self.h}" '
                   f'fill="none" stroke="#444"/>')

    def y_axis_log(self, lo, hi):
        """A log axis of ns from 10**lo to 10**hi, a line per decade."""
        self.log = (lo, hi)
        for e in range(lo, hi + 1):
            py = self.py(10.0 ** e)
            self.svg.append(f'<line x1="{self.x}" y1="{py:.1f}" x2="{self.x + self.w}" '
                            f'y2="{py:.1f}" stroke="#ddd"/>')
            self.svg.append(f'<text x="{self.x - 6}" y="{py + 4:.1f}" text-anchor="end">'
                            f'{fmt_ns(10.0 ** e).replace(".00", "").replace(".0 ", " ")}</text>')
        self.svg.append(f'<rect x="{self.x}" y="{self.y}" width="{self.w}" height="{self.h}" '
                        f'fill="none" stroke="#444"/>')

    def py(self, v):
        if getattr(self, "log", None):
            lo, hi = self.log
            return self.y + self.h - (math.log10(v) - lo) / (hi - lo) * self.h
        return self.y + self.h - v / self.top * self.h


def legend(svg, x, y, items):
    """Legend entries in two columns from (x, y) down, below a panel's x label."""
    for i, (label, color, dash, kind) in enumerate(items):
        lx, ly = x + (i % 2) * 200, y + (i // 2) * 16
        if kind == "bar":
            svg.append(f'<rect x="{lx}" y="{ly - 8}" width="18" height="10" fill="{color}"/>')
        else:
            svg.append(f'<line x1="{lx}" y1="{ly - 4}" x2="{lx + 18}" y2="{ly - 4}" '
                       f'stroke="{color}" stroke-width="2" stroke-dasharray="{dash}"/>')
        svg.append(f'<text x="{lx + 24}" y="{ly}">{esc(label)}</text>')


def line_panel(svg, data, box, title, xs, xlabel, series, yunit, ylog=False):
    """series: [(label, side, case-name pattern with {x}, dash)]; log x axis, log y if @ylog."""
    x, y, w, h = box
    values = {}
    for label, side, pattern, _ in series:
        pts = []
        for xv in xs:
            rounds = data.get(pattern.format(x=xv), {}).get(side, {})
            if rounds:
                pts.append((xv, statistics.median(rounds.values())))
        values[label] = pts
    every = [v for pts in values.values() for _, v in pts] or [1]
    if ylog:
        div = 1
        p = Panel(svg, x, y, w, h, title, f"{yunit} (log scale)")
        p.y_axis_log(math.floor(math.log10(min(every))), math.ceil(math.log10(max(every))))
    else:
        div, unit = (1e6, "ms") if max(every) >= 1e6 else (1e3, "µs")
        top, step = nice_max(max(every) / div)
        p = Panel(svg, x, y, w, h, title, f"{yunit} ({unit})")
        p.y_axis(top, step, div, lambda v: f"{v:g}")
    lo, hi = math.log10(xs[0]), math.log10(xs[-1])

    def px(xv):
        return x + 30 + (math.log10(xv) - lo) / (hi - lo) * (w - 60)

    for xv in xs:
        svg.append(f'<text x="{px(xv):.1f}" y="{y + h + 16}" text-anchor="middle">{xv:,}</text>')
    svg.append(f'<text x="{x + w / 2}" y="{y + h + 34}" text-anchor="middle">{esc(xlabel)}</text>')
    items = []
    for label, side, _, dash in series:
        pts = values[label]
        if not pts:
            continue
        color = COLORS[side]
        path = " ".join(f"{px(a):.1f},{p.py(b / div):.1f}" for a, b in pts)
        svg.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="2" '
                   f'stroke-dasharray="{dash}"/>')
        for a, b in pts:
            svg.append(f'<circle cx="{px(a):.1f}" cy="{p.py(b / div):.1f}" r="3" fill="{color}"/>')
        items.append((label, color, dash, "line"))
    legend(svg, x + 10, y + h + 56, items)


def bar_panel(svg, data, box, title):
    x, y, w, h = box
    kinds = (("null", "/dev/null"), ("marker", "trace_marker"), ("ftrace", "user event"))
    bars = []
    for kind, _ in kinds:
        for side in ("module", "upstream"):
            for wr in (1, 2):
                rounds = data.get(f"writers{wr}_{kind}", {}).get(side, {})
                bars.append(statistics.median(rounds.values()) if rounds else 0)
    top, step = nice_max(max(bars + [1]) / 1e3)
    p = Panel(svg, x, y, w, h, title, "time per call of one process (µs)")
    p.y_axis(top, step, 1e3, lambda v: f"{v:g}")
    group_w = w / len(kinds)
    bar_w = group_w / 6
    i = 0
    for g, (_, label) in enumerate(kinds):
        gx = x + g * group_w + bar_w
        for side in ("module", "upstream"):
            for wr in (1, 2):
                v = bars[i] / 1e3
                i += 1
                color = LIGHT[side] if wr == 1 else COLORS[side]
                svg.append(f'<rect x="{gx:.1f}" y="{p.py(v):.1f}" width="{bar_w - 2:.1f}" '
                           f'height="{y + h - p.py(v):.1f}" fill="{color}"/>')
                gx += bar_w
        svg.append(f'<text x="{x + g * group_w + group_w / 2:.1f}" y="{y + h + 16}" '
                   f'text-anchor="middle">{esc(label)}</text>')
    legend(svg, x + 10, y + h + 40, [
        ("module, 1 writer", LIGHT["module"], "", "bar"),
        ("module, 2 writers", COLORS["module"], "", "bar"),
        ("upstream, 1 writer", LIGHT["upstream"], "", "bar"),
        ("upstream, 2 writers", COLORS["upstream"], "", "bar"),
    ])


def svg_plot(data, subtitle):
    width, height = 1000, 830
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{width / 2}" y="22" text-anchor="middle" font-size="15" font-weight="bold">'
           f'rust_user_events.ko against upstream user_events: scaling</text>',
           f'<text x="{width / 2}" y="40" text-anchor="middle" fill="#555">{esc(subtitle)}</text>']
    ns = (10, 1000, 10000)
    line_panel(svg, data, (80, 90, 380, 240),
               "Another process's REG/UNREG, N events held", ns, "events held (N)", [
                   ("module REG", "module", "events{x}_reg", ""),
                   ("upstream REG", "upstream", "events{x}_reg", ""),
                   ("module UNREG", "module", "events{x}_unreg", "6 4"),
                   ("upstream UNREG", "upstream", "events{x}_unreg", "6 4"),
                   ("module REG, new event", "module", "events{x}_reg_new", "2 3"),
                   ("upstream REG, new event", "upstream", "events{x}_reg_new", "2 3"),
               ], "time per call", ylog=True)
    line_panel(svg, data, (580, 90, 380, 240),
               "REG/UNREG by the holder of N enablers", ns, "enablers held (N)", [
                   ("module REG", "module", "enablers{x}_reg_own", ""),
                   ("upstream REG", "upstream", "enablers{x}_reg_own", ""),
                   ("module UNREG", "module", "enablers{x}_unreg_own", "6 4"),
                   ("upstream UNREG", "upstream", "enablers{x}_unreg_own", "6 4"),
               ], "time per call")
    line_panel(svg, data, (80, 500, 380, 240),
               "Enable + disable, 1,000 enablers over P processes", (1, 10, 100),
               "processes (P), 1,000/P enablers each", [
                   ("module", "module", "FANOUT{x}", ""),
                   ("upstream", "upstream", "FANOUT{x}", ""),
               ], "toggle")
    bar_panel(svg, data, (580, 500, 380, 240), "One writer against two (16 B each)")
    svg.append("</svg>")
    return "\n".join(svg) + "\n"


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: report.py ROUNDS_TSV OUTDIR [META_FILE]")
    data = read_rounds(sys.argv[1])
    outdir = sys.argv[2]
    meta = ""
    if len(sys.argv) > 3:
        with open(sys.argv[3], encoding="utf-8") as f:
            meta = f.read()
    # The fan-out cases by process count, for the plot's x axis.
    for p in (1, 10, 100):
        case = f"fanout{p}x{1000 // p}"
        if case in data:
            data[f"FANOUT{p}"] = data[case]
    summary = summarize({k: v for k, v in data.items() if not k.startswith("FANOUT")})
    table = text_table(summary)
    sys.stdout.write(meta + table)
    files = {
        "results.txt": meta + table,
        "results.md": md_table(summary),
        "results.tsv": tsv(summary),
        "scaling.svg": svg_plot(data, meta.splitlines()[0] if meta else ""),
    }
    for name, text in files.items():
        with open(os.path.join(outdir, name), "w", encoding="utf-8") as f:
            f.write(text)


if __name__ == "__main__":
    main()
