/**
 * Perfetto's TraceBufferV2, the tracing service's buffer of producers' chunks: chunks are
 * copied in untrusted, patched, overwritten or discarded as the buffer's policy says, and
 * read back as whole packets with their sequence's trusted identity and loss flags.
 * Nothing here is thread-safe: the service serializes each buffer's writers and reader.
 *
 * <p>Invariants, tested over random operation sequences: every packet read is intact
 * (never stitched across a hole); per sequence packets come in order, none twice, and
 * the first packet read after a loss carries {@link dev.ffmtrace.tracing.buffer.DataLossReason
 * a loss flag}; and {@code bytes_written = bytes_read + bytes_overwritten +} the stored
 * chunks not yet counted, at every step (likewise for chunks; see
 * {@link dev.ffmtrace.tracing.buffer.TraceBufferStats}).
 *
 * <p>The buffer prints what Perfetto's C++ buffer prints, except in the cases listed,
 * each with what the C++ does and why ffmtrace does otherwise, in the module's
 * {@code README.md} ("Where ffmtrace differs from Perfetto's C++"): losses the C++
 * misses or reports twice, packets it stitches across a hole or drops although whole,
 * chunks it counts twice or never.
 */
package dev.ffmtrace.tracing.buffer;
