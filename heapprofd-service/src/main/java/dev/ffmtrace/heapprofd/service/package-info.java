/**
 * heapprofd's service, in-process: {@link dev.ffmtrace.heapprofd.service.HeapprofdService}
 * accepts heapprofd clients (the Java {@code HeapprofdClient}, the preloaded C client),
 * reads their rings and keeps per-process books of sampled allocations by callsite,
 * written out as folded stacks.
 */
package dev.ffmtrace.heapprofd.service;
