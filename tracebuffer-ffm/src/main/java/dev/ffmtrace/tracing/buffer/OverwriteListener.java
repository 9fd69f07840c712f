package dev.ffmtrace.tracing.buffer;

/**
 * Receives, in sequence order, every still-valid packet of the chunks a
 * {@link OverwritePolicy#RING_BUFFER} buffer deletes to make room: the seam where a
 * proto merger (ProtoVM) keeps the state those packets carried.
 *
 * <p>The view and its fragments are valid only during the call: the bytes are
 * overwritten as soon as it returns. Its loss reasons are those pending on the
 * sequence, which stay pending for the next packet read. The listener must not call
 * back into the buffer.
 */
@FunctionalInterface
public interface OverwriteListener {
    void onPacketOverwritten(TracePacketView packet);
}
