/**
 * heapprofd's client for Java: {@link dev.ffmtrace.heapprofd.client.HeapprofdClient}
 * makes heapprofd's handshake on its socket and records the allocations and frees of heaps
 * a Java service registers (custom heaps), sampled by a
 * {@link dev.ffmtrace.heapprofd.client.Sampler} per heap and thread, into the service's
 * SharedRingBuffer, each with the Java stack that allocated it;
 * {@link dev.ffmtrace.heapprofd.client.ProfiledArena} reports what an FFM arena
 * allocates. The service side is {@code heapprofd-service} ({@code docs/design/heapprofd.md}).
 */
package dev.ffmtrace.heapprofd.client;
