package dev.ffmtrace.tracing.consumer;

import dev.ffmtrace.perfetto.protos.ReadBuffersResponse;
import dev.ffmtrace.perfetto.protos.Trace;
import dev.ffmtrace.protozero.ProtoWire;
import dev.ffmtrace.protozero.RepeatedFieldIterator;
import java.io.ByteArrayOutputStream;

/**
 * Glues the slices of ReadBuffers replies back into a {@code Trace}: the bytes of the
 * slices up to one marked last are one packet, written as field 1. The slices of a packet
 * not ended yet wait for the next reply. Not thread-safe.
 */
public final class TraceAssembler {
    private final ByteArrayOutputStream trace = new ByteArrayOutputStream();
    private final ByteArrayOutputStream partial = new ByteArrayOutputStream();
    private final RepeatedFieldIterator slices = new RepeatedFieldIterator();
    private final ReadBuffersResponse.Slice.Decoder slice = new ReadBuffersResponse.Slice.Decoder();
    private final byte[] header = new byte[1 + 10];

    /** An assembler with no packets yet. */
    public TraceAssembler() {
    }

    /** Adds the slices of one reply; a malformed slice is skipped. */
    public void append(ReadBuffersResponse.Decoder response) {
        response.slices(slices);
        while (slices.next()) {
            slice.reset(slices.field());
            if (slice.hasError()) {
                continue;
            }
            partial.writeBytes(slice.data());
            if (slice.lastSliceForPacket()) {
                int tagSize = ProtoWire.writeVarInt(header, 0,
                        ProtoWire.makeTag(Trace.PACKET_FIELD_NUMBER, ProtoWire.WIRE_TYPE_LENGTH_DELIMITED));
                trace.write(header, 0, ProtoWire.writeVarInt(header, tagSize, partial.size()));
                trace.writeBytes(partial.toByteArray());
                partial.reset();
            }
        }
    }

    /** The packets ended so far, as a {@code Trace}. */
    public byte[] toByteArray() {
        return trace.toByteArray();
    }
}
