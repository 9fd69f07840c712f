package dev.ffmtrace.tracing.trackevent;

import dev.ffmtrace.memory.Layouts;
import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.protozero.HeapBuffered;
import dev.ffmtrace.protozero.ProtoWire;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * A {@link TracePacketSink} that writes one sequence straight into a trace file, with no
 * service: each packet becomes a {@code Trace.packet} (field 1) carrying the given
 * {@code trusted_packet_sequence_id}, as a service would have added it. For traces
 * generated offline:
 *
 * <pre>{@code
 * var config = new TrackEventWriter.Config(null, TraceClock.BOOTTIME, false);
 * try (var events = new TrackEventWriter(new TraceFileWriter(Files.newOutputStream(path), 1), config)) {
 *     long slice = events.atTimestamp(200).beginSlice(Category.NONE, track, name);
 *     events.atTimestamp(300).endSlice(track, slice);
 * }
 * }</pre>
 *
 * <p>Write failures surface from this sink as {@link UncheckedIOException} and leave it
 * closed; a {@link TrackEventWriter} over it counts them in {@code discardedEvents()} rather
 * than passing them on. Closing closes the stream.
 */
public final class TraceFileWriter implements TracePacketSink {
    private static final int TRACE_PACKET_TAG = 0x0a;
    private static final long SEQUENCE_ID_TAG =
            ProtoWire.makeTag(TracePacket.TRUSTED_PACKET_SEQUENCE_ID_FIELD_NUMBER, ProtoWire.WIRE_TYPE_VARINT);

    private final OutputStream out;
    private final int sequenceId;
    private final HeapBuffered<TracePacket> packet = new HeapBuffered<>(TracePacket.FACTORY);
    private final byte[] header = new byte[1 + 5];
    /** {@code trusted_packet_sequence_id}, encoded: the field a hand-encoded packet ends with. */
    private final byte[] sequenceIdField;
    private byte[] bytes = new byte[4096];
    /** Whether a packet is being written. */
    private boolean open;
    private boolean closed;
    /** The stream failed: nothing more is written. */
    private boolean failed;

    /**
     * @param sequenceId the sequence's {@code trusted_packet_sequence_id} (not 0; 1 is the
     *     service's own in traces Perfetto writes)
     */
    public TraceFileWriter(OutputStream out, int sequenceId) {
        if (sequenceId == 0) {
            throw new IllegalArgumentException("0 is not a packet sequence id");
        }
        this.out = out;
        this.sequenceId = sequenceId;
        byte[] field = new byte[1 + ProtoWire.MAX_VARINT_SIZE];
        int size = ProtoWire.writeVarInt(field, ProtoWire.writeVarInt(field, 0, SEQUENCE_ID_TAG), sequenceId);
        this.sequenceIdField = Arrays.copyOf(field, size);
    }

    @Override
    public TracePacket newTracePacket() {
        if (closed || failed) {
            throw new IllegalStateException(closed ? "the trace file writer is closed" : "the trace file failed");
        }
        if (open) {
            finishTracePacket();
        }
        open = true;
        packet.reset();
        return packet.get();
    }

    @Override
    public void finishTracePacket() {
        if (!open) {
            throw new IllegalStateException("no packet is open");
        }
        open = false;
        packet.get().setTrustedPacketSequenceId(sequenceId);
        MemorySegment encoded = packet.toSegment();
        int size = Math.toIntExact(encoded.byteSize());
        if (bytes.length < size) {
            bytes = new byte[Math.max(size, bytes.length * 2)];
        }
        MemorySegment.copy(encoded, Layouts.BYTE, 0, bytes, 0, size);
        int headerSize = ProtoWire.writeVarInt(header, ProtoWire.writeVarInt(header, 0, TRACE_PACKET_TAG), size);
        try {
            out.write(header, 0, headerSize);
            out.write(bytes, 0, size);
        } catch (IOException e) {
            failed = true;
            throw new UncheckedIOException("writing a trace packet", e);
        }
    }

    /**
     * Writes the packet straight to the stream, its sequence id appended: no message is
     * built (a converter writes millions of small packets).
     */
    @Override
    public void writeEncodedPacket(byte[] packetBytes, int offset, int length) {
        if (closed || failed || open) {
            throw new IllegalStateException(closed ? "the trace file writer is closed"
                    : failed ? "the trace file failed" : "a packet is open");
        }
        int size = length + sequenceIdField.length;
        int staged = 1 + ProtoWire.MAX_VARINT_SIZE + size;
        if (bytes.length < staged) {
            bytes = new byte[Math.max(staged, bytes.length * 2)];
        }
        int at = ProtoWire.writeVarInt(bytes, ProtoWire.writeVarInt(bytes, 0, TRACE_PACKET_TAG), size);
        System.arraycopy(packetBytes, offset, bytes, at, length);
        at += length;
        System.arraycopy(sequenceIdField, 0, bytes, at, sequenceIdField.length);
        write(bytes, at + sequenceIdField.length);
    }

    private void write(byte[] staged, int length) {
        try {
            out.write(staged, 0, length);
        } catch (IOException e) {
            failed = true;
            throw new UncheckedIOException("writing a trace packet", e);
        }
    }

    /** Nothing is ever lost on the way to the file: the state never needs starting again. */
    @Override
    public long incrementalStateEpoch() {
        return 0;
    }

    @Override
    public boolean isOpen() {
        return !closed && !failed;
    }

    @Override
    public void flush() {
        if (!isOpen()) {
            return;
        }
        try {
            out.flush();
        } catch (IOException e) {
            throw new UncheckedIOException("flushing the trace file", e);
        }
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            out.close();
        } catch (IOException e) {
            throw new UncheckedIOException("closing the trace file", e);
        }
    }
}
