#!/usr/bin/env python3
"""The table of scripts/bench-vs-perfetto: each row's median over the rounds on both
sides, the rounds' spread, Java's speed over C++'s (above 1: Java is faster), Java's
allocation per operation and, for throughput rows, Java's rate as a fraction of memcpy
(the same bytes moved by MemorySegment.copy, medians of the same rounds); the heapprofd
rows, Java only, read as a fraction of their unwind-free floor (the same records copied,
parsed and booked at a stack already unwound). Units ending in "/s" are rates (higher is
better), the others costs (lower is better).

Usage: bench-vs-perfetto-table.py RESULTS LOADS PERFETTO_REV
RESULTS lines: "<round> java|cxx <row> <value> <unit>"; LOADS lines: "<round> load <1-min load>".
"""
import collections
import datetime
import os
import statistics
import sys

# (section, what the row measures, Java row, C++ row, Java memcpy row or None)
ROWS = [
    ("ProtoZero", "simple message, ProtoZero", "ProtozeroBenchmark.simpleProtozero",
     "BM_Protozero_Simple_Protozero", None),
    ("ProtoZero", "nested message (3 levels), ProtoZero", "ProtozeroBenchmark.nestedProtozero",
     "BM_Protozero_Nested_Protozero", None),
    ("ProtoZero", "simple message, protobuf-java / libprotobuf", "ProtozeroBenchmark.simpleProtobufJava",
     "BM_Protozero_Simple_Libprotobuf", None),
    ("ProtoZero", "nested message, protobuf-java / libprotobuf", "ProtozeroBenchmark.nestedProtobufJava",
     "BM_Protozero_Nested_Libprotobuf", None),
    ("ProtoZero", "simple message, speed of light (raw stores)", "ProtozeroBenchmark.simpleSpeedOfLight",
     "BM_Protozero_Simple_SpeedOfLight", None),
    ("ProtoZero", "nested message, speed of light", "ProtozeroBenchmark.nestedSpeedOfLight",
     "BM_Protozero_Nested_SpeedOfLight", None),
    ("TraceBuffer", "write 4 KiB chunks, 1 writer", "TraceBufferBenchmark.writeSingleWriter:bytes",
     "BM_TraceBuffer_WR_SingleWriter<TraceBufferV2>", "TraceBufferBenchmark.memcpyWriteBaseline:bytes"),
    ("TraceBuffer", "write 4 KiB chunks, 1,000 writers", "TraceBufferBenchmark.writeMultipleWriters:bytes",
     "BM_TraceBuffer_WR_MultipleWriters<TraceBufferV2>", "TraceBufferBenchmark.memcpyWriteBaseline:bytes"),
    ("TraceBuffer", "read a full 128 MiB buffer (payload)", "TraceBufferBenchmark.readMixedPackets:bytes",
     "BM_TraceBuffer_RD<TraceBufferV2>", "TraceBufferBenchmark.memcpyReadBaseline:bytes"),
    ("TrackEvent", "slice begin, literal name (BM_TracingTrackEventBasic)", "TrackEventBenchmark.eventBasic",
     "BM_TracingTrackEventBasic", None),
    ("TrackEvent", "slice begin with a debug annotation", "TrackEventBenchmark.eventWithDebugAnnotation",
     "BM_TracingTrackEventDebugAnnotations", None),
    ("TrackEvent", "slice begin, category disabled", "TrackEventBenchmark.eventDisabled",
     "BM_TracingTrackEventDisabled", None),
    ("TrackEvent", "scoped slice, run-time name: SDK facade / TRACE_EVENT", "TrackEventFacadeBenchmark.facadeScopedSlice",
     "sdk_scoped_slice_dynamic", None),
    ("TrackEvent", "the same slice through a caller-held TrackEventWriter", "TrackEventFacadeBenchmark.directScopedSlice",
     "sdk_scoped_slice_dynamic", None),
    ("TrackEvent", "instant, run-time name: SDK facade / TRACE_EVENT_INSTANT", "TrackEventFacadeBenchmark.facadeInstant",
     "sdk_instant_dynamic", None),
    ("TrackEvent", "the same instant through a caller-held TrackEventWriter", "TrackEventFacadeBenchmark.directInstant",
     "sdk_instant_dynamic", None),
    ("TrackEvent", "scoped slice from a virtual thread (SDK facade; a writer borrowed per event)",
     "TrackEventFacadeBenchmark.facadeScopedSlice/virtual", "sdk_scoped_slice_dynamic", None),
    ("TrackEvent", "instant from a virtual thread (SDK facade)", "TrackEventFacadeBenchmark.facadeInstant/virtual",
     "sdk_instant_dynamic", None),
    ("TrackEvent", "scoped slice in a \"debug\"-tagged category no session records",
     "TrackEventFacadeBenchmark.facadeUnrecorded", "sdk_unrecorded_slice", None),
    ("SharedRingBuffer", "write then read a 64 B record (C: the project's C ring)",
     "SharedRingBufferBenchmark.writeThenRead/64", "ring_write_then_read/64", None),
    ("SharedRingBuffer", "write then read a 1 KiB record", "SharedRingBufferBenchmark.writeThenRead/1024",
     "ring_write_then_read/1024", None),
]
# scripts/ipc-throughput: serve (C1, as it ships) and serve with C2 beside traced, the same C producer.
for threads in (1, 4, 16):
    ROWS.append(("IPC", f"events/s from {threads} C producer thread{'s' if threads > 1 else ''}: serve (C1) / traced",
                 f"ipc_events/{threads}", f"ipc_events/{threads}", None))
    ROWS.append(("IPC", f"the same, serve with C2", f"ipc_c2_events/{threads}", f"ipc_events/{threads}", None))
for threads in (1, 4, 16):
    ROWS.append(("IPC", f"service CPU per event, {threads} thread{'s' if threads > 1 else ''}: serve (C1) / traced",
                 f"ipc_cpu/{threads}", f"ipc_cpu/{threads}", None))
    ROWS.append(("IPC", f"the same, serve with C2", f"ipc_c2_cpu/{threads}", f"ipc_cpu/{threads}", None))
ROWS.append(("IPC", "ReadBuffers: a full 64 MiB buffer cloned and read by `perfetto --clone-by-name` into a file: "
             "serve (C1) / traced", "readback_ipc", "readback_ipc", None))
ROWS.append(("IPC", "the same, serve with C2", "readback_ipc_c2", "readback_ipc", None))
# Rows with no C++ counterpart: (what the row measures, Java row).
JAVA_ONLY = [
    ("readback of a full 4 MiB buffer (1 KiB packets) into a file (target: 2 GB/s)",
     "ReadbackBenchmark.snapshotToFile:bytes"),
]

# heapprofd's service, Java only: (stack depth, the records' row, their unwind-free floor).
HEAPPROFD = [(depth, f"HeapprofdServiceBenchmark.mallocThenFree/{depth}",
              f"HeapprofdServiceBenchmark.mallocThenFreeUnwindFree/{depth}") for depth in (10, 30)]


def load(path):
    values = collections.defaultdict(list)
    units = {}
    for line in open(path):
        parts = line.split()
        if len(parts) != 5:
            continue
        _, side, row, value, unit = parts
        values[(side, row)].append(float(value))
        units[(side, row)] = unit
    return values, units


def shown(value, unit):
    if unit == "bytes/s":
        return f"{value / 1e9:.2f} GB/s"
    if unit == "events/s":
        return f"{value / 1e6:.2f} M/s"
    return f"{value:.2f} ns" if value < 10 else f"{value:.1f} ns"


def spread(values, unit):
    lo, hi = min(values), max(values)
    if unit == "bytes/s":
        return f"{lo / 1e9:.2f}-{hi / 1e9:.2f}"
    if unit == "events/s":
        return f"{lo / 1e6:.2f}-{hi / 1e6:.2f}"
    return f"{lo:.2f}-{hi:.2f}" if hi < 10 else f"{lo:.1f}-{hi:.1f}"


def main():
    values, units = load(sys.argv[1])
    loads = [float(line.split()[2]) for line in open(sys.argv[2]) if line.strip()]
    rounds = len(loads)
    cpu = "unknown CPU"
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    print(f"One run of `scripts/bench-vs-perfetto` ({datetime.date.today()}, {rounds} rounds, "
          f"{os.cpu_count()} x {cpu}, 1-minute load {min(loads):.2f} to {max(loads):.2f} at the rounds' "
          f"starts; Perfetto {sys.argv[3][:12]}). Medians over the rounds, then the rounds' spread; "
          "speed is Java's over C++'s (above 1: Java is faster); B/op is JMH's gc.alloc.rate.norm; "
          "\"of floor\" is the Java row's rate over `MemorySegment.copy` of the same bytes in the "
          "same rounds (memcpy) or, for heapprofd, over the same records booked without unwinding.")
    print()
    print("| | row | Java | rounds | C++ | rounds | speed | Java B/op | of floor |")
    print("|---|---|---|---|---|---|---|---|---|")
    section = None
    for group, what, jrow, crow, memcpy in ROWS:
        j, c = values.get(("java", jrow)), values.get(("cxx", crow))
        label = group if group != section else ""
        section = group
        if not j or not c:
            print(f"| {label} | {what} | missing | | | | | | |")
            continue
        # A JMH byte counter's unit is ops/s: its operations are bytes.
        unit = "bytes/s" if jrow.endswith(":bytes") else units[("java", jrow)]
        jm, cm = statistics.median(j), statistics.median(c)
        speed = jm / cm if unit.endswith("/s") else cm / jm
        alloc_row = jrow.split(":")[0] + ":gc.alloc.rate.norm"
        alloc = values.get(("java", alloc_row))
        alloc_text = f"{statistics.median(alloc):.2f}" if alloc else "-"
        floor = values.get(("java", memcpy)) if memcpy else None
        floor_text = f"{100 * jm / statistics.median(floor):.0f}%" if floor else ""
        print(f"| {label} | {what} | {shown(jm, unit)} | {spread(j, unit)} | {shown(cm, unit)} | "
              f"{spread(c, unit)} | {speed:.2f} | {alloc_text} | {floor_text} |")
    for what, jrow in JAVA_ONLY:
        j = values.get(("java", jrow))
        if not j:
            print(f"| | {what} | missing | | | | | | |")
            continue
        alloc = values.get(("java", jrow.split(":")[0] + ":gc.alloc.rate.norm"))
        alloc_text = f"{statistics.median(alloc):.2f}" if alloc else "-"
        print(f"| | {what} | {shown(statistics.median(j), 'bytes/s')} | {spread(j, 'bytes/s')} | | | | "
              f"{alloc_text} | |")
    for depth, jrow, frow in HEAPPROFD:
        label = "heapprofd" if depth == HEAPPROFD[0][0] else ""
        j, f = values.get(("java", jrow)), values.get(("java", frow))
        what = (f"heapprofd service: a C client's Malloc ({depth} native frames) unwound, symbolized and booked, "
                "and its Free; per record (M records/s on the connection's thread)")
        if not j or not f:
            print(f"| {label} | {what} | missing | | | | | | |")
            continue
        jm, fm = statistics.median(j), statistics.median(f)
        alloc = values.get(("java", jrow + ":gc.alloc.rate.norm"))
        alloc_text = f"{statistics.median(alloc):.2f}" if alloc else "-"
        print(f"| {label} | {what} | {shown(jm, 'ns/op')} ({1e3 / jm:.2f} M/s) | {spread(j, 'ns/op')} | | | | "
              f"{alloc_text} | {100 * fm / jm:.0f}% |")
        print(f"| | the same records' unwind-free floor | {shown(fm, 'ns/op')} ({1e3 / fm:.2f} M/s) | "
              f"{spread(f, 'ns/op')} | | | | | |")
    floor = values.get(("java", "TrackEventBenchmark.emptyLoop"))
    if floor:
        print(f"| | JMH's loop around an empty body (under every Java ns/op row) | "
              f"{shown(statistics.median(floor), 'ns/op')} | {spread(floor, 'ns/op')} | | | | | |")
    for memcpy in ("TraceBufferBenchmark.memcpyWriteBaseline:bytes", "TraceBufferBenchmark.memcpyReadBaseline:bytes"):
        m = values.get(("java", memcpy))
        if m:
            print(f"| | memcpy floor: {memcpy.split('.')[1].split(':')[0]} | {shown(statistics.median(m), 'bytes/s')} | "
                  f"{spread(m, 'bytes/s')} | | | | | |")
    print()


if __name__ == "__main__":
    main()
