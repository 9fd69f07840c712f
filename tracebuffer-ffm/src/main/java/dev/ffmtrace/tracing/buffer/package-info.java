/**
 * Perfetto's TraceBufferV2, the tracing service's buffer of producers' chunks: chunks are
 * copied in untrusted, patched, overwritten or discarded as the buffer's policy says, and
 * read back as whole packets with their sequence's trusted identity and loss flags.
 * Nothing here is thread-safe: the service serializes each buffer's writers and reader.
 */
package dev.ffmtrace.tracing.buffer;
