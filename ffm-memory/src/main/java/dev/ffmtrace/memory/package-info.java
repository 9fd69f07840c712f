/**
 * Shared memory and sockets for tracing across processes: sealed memfd files
 * ({@link dev.ffmtrace.memory.MemoryFile}), their shared and double mappings
 * ({@link dev.ffmtrace.memory.SharedMemory}, {@link dev.ffmtrace.memory.RingMapping}), Unix
 * sockets that pass fds and vouch for their peer ({@link dev.ffmtrace.memory.StreamSocket}),
 * and the named memory orderings every shared layout uses
 * ({@link dev.ffmtrace.memory.AtomicSegment}). Every failed system call throws a
 * {@link dev.ffmtrace.memory.NativeException} naming the call and its errno.
 */
package dev.ffmtrace.memory;
