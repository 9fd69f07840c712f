/**
 * The shared memory buffer's bytes: page headers, chunk headers and the chunk state
 * machine, byte-exact with Perfetto's {@code SharedMemoryABI}. Exported only to the buffer
 * and the service, which read what producers write; applications use the writer API.
 */
package dev.ffmtrace.tracing.smb.abi;
