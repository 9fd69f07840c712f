#!/usr/bin/env python3
"""The charts and tables of scripts/bench-curves: reads its work folder (tracebuffer.csv,
virtual.csv and heapprofd.csv from JMH, ipc.txt from scripts/ipc-throughput --results), prints a markdown table
per curve and writes one SVG line chart per curve (x on a log scale) into CHARTS.

Usage: bench-curves-svg.py WORK CHARTS
"""
import csv
import math
import os
import sys

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"]
WIDTH, HEIGHT = 760, 360
LEFT, RIGHT, TOP, BOTTOM = 70, 250, 40, 50


def jmh_rows(path):
    """(benchmark method[:secondary], param value or "", score) per CSV row."""
    with open(path, newline="") as f:
        rows = list(csv.reader(line.rstrip("\r\n") for line in f))
    header = rows[0]
    param = next((i for i, name in enumerate(header) if name.startswith("Param:")), None)
    for row in rows[1:]:
        method, _, secondary = row[0].partition(":")
        name = method.rsplit(".", 1)[1] + (":" + secondary if secondary else "")
        yield name, row[param] if param is not None else "", float(row[4])


def nice_step(span):
    raw = span / 5
    magnitude = 10 ** math.floor(math.log10(raw))
    return next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw)


def chart(path, title, x_label, y_label, series):
    """series: [(name, [(x, y), ...])]; x > 0, on a log scale."""
    xs = sorted({x for _, points in series for x, _ in points})
    y_max = max(y for _, points in series for _, y in points) * 1.1
    step = nice_step(y_max)
    y_top = math.ceil(y_max / step) * step
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    lo, hi = math.log10(xs[0]), math.log10(xs[-1])

    def px(x):
        return LEFT + (plot_w * (math.log10(x) - lo) / (hi - lo) if hi > lo else plot_w / 2)

    def py(y):
        return TOP + plot_h * (1 - y / y_top)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
           f'<text x="{WIDTH / 2}" y="20" text-anchor="middle" font-size="14">{title}</text>']
    y = 0.0
    while y <= y_top + step / 2:
        out.append(f'<line x1="{LEFT}" y1="{py(y):.1f}" x2="{LEFT + plot_w}" y2="{py(y):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{LEFT - 6}" y="{py(y) + 4:.1f}" text-anchor="end">{y:g}</text>')
        y += step
    for x in xs:
        out.append(f'<line x1="{px(x):.1f}" y1="{TOP + plot_h}" x2="{px(x):.1f}" y2="{TOP + plot_h + 4}" stroke="black"/>')
        out.append(f'<text x="{px(x):.1f}" y="{TOP + plot_h + 18}" text-anchor="middle">{x:,}</text>')
    out.append(f'<line x1="{LEFT}" y1="{TOP + plot_h}" x2="{LEFT + plot_w}" y2="{TOP + plot_h}" stroke="black"/>')
    out.append(f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{TOP + plot_h}" stroke="black"/>')
    out.append(f'<text x="{LEFT + plot_w / 2}" y="{HEIGHT - 10}" text-anchor="middle">{x_label}</text>')
    out.append(f'<text x="16" y="{TOP + plot_h / 2}" text-anchor="middle" '
               f'transform="rotate(-90 16 {TOP + plot_h / 2})">{y_label}</text>')
    for i, (name, points) in enumerate(series):
        color = COLORS[i % len(COLORS)]
        coords = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in sorted(points))
        out.append(f'<polyline points="{coords}" fill="none" stroke="{color}" stroke-width="2"/>')
        for x, y in points:
            out.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" fill="{color}"/>')
        ly = TOP + 16 + 20 * i
        out.append(f'<line x1="{LEFT + plot_w + 12}" y1="{ly - 4}" x2="{LEFT + plot_w + 32}" y2="{ly - 4}" '
                   f'stroke="{color}" stroke-width="2"/>')
        out.append(f'<text x="{LEFT + plot_w + 38}" y="{ly}">{name}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def table(title, x_name, xs, series, unit):
    print(f"{title} ({unit})")
    print()
    print(f"| {x_name} | " + " | ".join(f"{x:,}" for x in xs) + " |")
    print("|---|" + "---|" * len(xs))
    for name, points in series:
        values = dict(points)
        print(f"| {name} | " + " | ".join(f"{values[x]:.2f}" if x in values else "-" for x in xs) + " |")
    print()


def main():
    work, charts = sys.argv[1], sys.argv[2]

    writes, memcpy = [], None
    for name, param, score in jmh_rows(os.path.join(work, "tracebuffer.csv")):
        if name == "writeMultipleWriters:bytes":
            writes.append((int(param), score / 1e9))
        elif name == "memcpyWriteBaseline:bytes":
            memcpy = score / 1e9
    xs = sorted(x for x, _ in writes)
    series = [("TraceBufferV2 write", writes)]
    if memcpy is not None:
        series.append(("memcpy (MemorySegment.copy)", [(x, memcpy) for x in xs]))
    table("TraceBuffer write, 4 KiB chunks", "writers", xs, series, "GB/s")
    chart(os.path.join(charts, "tracebuffer-writers.svg"), "TraceBufferV2 write, 4 KiB chunks",
          "writers taking turns", "GB/s", series)

    ipc = {}
    for line in open(os.path.join(work, "ipc.txt")):
        _, side, row, value, _ = line.split()
        name, threads = row.split("/")
        label = {("java", "ipc_events"): "serve (C1)", ("java", "ipc_c2_events"): "serve with C2",
                 ("cxx", "ipc_events"): "traced"}.get((side, name))
        if label:
            ipc.setdefault(label, []).append((int(threads), float(value) / 1e6))
    series = [(label, ipc[label]) for label in ("serve (C1)", "serve with C2", "traced") if label in ipc]
    xs = sorted({x for _, points in series for x, _ in points})
    table("IPC: events through the producer socket into a file", "producer threads", xs, series, "M events/s")
    chart(os.path.join(charts, "ipc-producers.svg"), "Producer IPC: events into a trace file",
          "C producer threads", "M events/s", series)

    per_event, alloc = [], []
    for name, param, score in jmh_rows(os.path.join(work, "virtual.csv")):
        if name == "instants":
            per_event.append((int(param), score))
        elif name == "instants:gc.alloc.rate.norm":
            alloc.append((int(param), score))
    xs = sorted(x for x, _ in per_event)
    table("SDK: a million instants from virtual threads", "virtual threads", xs,
          [("ns an event", per_event), ("B an event", alloc)], "per event")
    chart(os.path.join(charts, "virtual-threads.svg"), "SDK instants from virtual threads (2 carriers)",
          "virtual threads started together", "ns an event", [("ns an event", per_event)])

    # JMH's ns per record; a connection's thread handles 1,000 / ns million records a second.
    rates = {"mallocThenFree": [], "mallocThenFreeUnwindFree": []}
    for name, param, score in jmh_rows(os.path.join(work, "heapprofd.csv")):
        if name in rates:
            rates[name].append((int(param), 1e3 / score))
    series = [("Malloc + Free, unwound", rates["mallocThenFree"]),
              ("unwind-free floor", rates["mallocThenFreeUnwindFree"])]
    xs = sorted(x for x, _ in rates["mallocThenFree"])
    table("heapprofd service: a C client's records by native stack depth", "frames", xs, series,
          "M records/s on one connection's thread")
    chart(os.path.join(charts, "heapprofd-depth.svg"), "heapprofd service: records by stack depth",
          "native frames a Malloc's stack unwinds to", "M records/s", series)


if __name__ == "__main__":
    main()
