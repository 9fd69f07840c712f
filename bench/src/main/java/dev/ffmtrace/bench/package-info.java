/**
 * JMH benchmarks of every hot path (ProtoZero, TraceWriter, TraceBufferV2, TrackEvent,
 * SharedRingBuffer, segment atomics, the producer port, the heapprofd client), run with
 * {@code -prof gc} so allocation is measured as well as time.
 */
package dev.ffmtrace.bench;
