/**
 * heapprofd's wire, byte for byte as Perfetto's client and service write it: the Free,
 * Malloc and HeapName records a client writes into its SharedRingBuffer
 * ({@link dev.ffmtrace.heapprofd.wire.WireRecords}, read back by
 * {@link dev.ffmtrace.heapprofd.wire.WireRecord}) and the
 * {@link dev.ffmtrace.heapprofd.wire.ClientConfiguration} the service sends a client.
 */
package dev.ffmtrace.heapprofd.wire;
