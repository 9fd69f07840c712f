/**
 * heapprofd's client for Java: {@link dev.ffmtrace.heapprofd.client.HeapprofdClient}
 * makes heapprofd's handshake on its socket and records the allocations and frees of heaps
 * a Java service registers (custom heaps), sampled by a
 * {@link dev.ffmtrace.heapprofd.client.Sampler} per heap, into the service's
 * SharedRingBuffer. Java stacks in the records, the FFM arena wrapper and adaptive
 * sampling come next (see the README).
 */
package dev.ffmtrace.heapprofd.client;
