/**
 * The producer side of Perfetto's tracing protocol: a
 * {@link dev.ffmtrace.tracing.smb.SharedMemoryArbiter} hands out the chunks of a shared
 * memory buffer to {@link dev.ffmtrace.tracing.smb.TraceWriter}s, which write trace packets
 * straight into them and commit them, with patches, through a
 * {@link dev.ffmtrace.tracing.smb.CommitTransport}. This is all an application needs to
 * write a trace into an SMB; it pulls in neither TraceBufferV2 nor the service.
 */
package dev.ffmtrace.tracing.smb;
