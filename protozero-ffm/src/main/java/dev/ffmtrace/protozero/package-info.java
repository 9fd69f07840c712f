/**
 * ProtoZero on {@link java.lang.foreign.MemorySegment}s: an append-only protobuf
 * writer that serializes each field straight into its destination memory, and a
 * zero-copy decoder. Both allocate nothing on the Java heap once warm.
 *
 * <h2>Writing</h2>
 * A {@link dev.ffmtrace.protozero.ScatteredStreamWriter} appends into the current slice
 * and asks its {@link dev.ffmtrace.protozero.ScatteredStreamWriter.Delegate} for the
 * next one when a write crosses the end (in tracing, the next shared-memory chunk).
 * Generated writer classes extend {@link dev.ffmtrace.protozero.Message}; a root message
 * is started with {@link dev.ffmtrace.protozero.Message#reset}, nested messages come
 * from {@link dev.ffmtrace.protozero.Message#beginNestedMessage} (generated as
 * {@code setX()}/{@code addX()} returning the child). Nested lengths are back-filled;
 * a delegate that gives a slice away while a nested message whose size field lies in
 * it is still open moves the size field to a patch slot of its own with
 * {@link dev.ffmtrace.protozero.Message#redirectSizeFields}. For building messages on
 * the heap, use {@link dev.ffmtrace.protozero.HeapBuffered}.
 *
 * <h2>Decoding</h2>
 * {@link dev.ffmtrace.protozero.ProtoDecoder} iterates the fields of a message as
 * {@link dev.ffmtrace.protozero.ProtoField} views; generated decoders extend
 * {@link dev.ffmtrace.protozero.TypedProtoDecoder} for lookups by field id. Malformed
 * input ends decoding with a {@link dev.ffmtrace.protozero.DecodeStatus}, never an
 * exception, and nothing outside the given bounds is read.
 */
package dev.ffmtrace.protozero;
