package dev.ffmtrace.tracing.service.ipc;

import dev.ffmtrace.ipc.Invocation;
import dev.ffmtrace.perfetto.protos.ReadBuffersResponse;
import dev.ffmtrace.perfetto.protos.Trace;
import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.perfetto.protos.TraceUuid;
import dev.ffmtrace.protozero.HeapBuffered;
import dev.ffmtrace.protozero.ProtoDecoder;
import dev.ffmtrace.protozero.ProtoField;
import dev.ffmtrace.protozero.ProtoWire;
import java.io.ByteArrayOutputStream;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.WritableByteChannel;

/**
 * Between a {@code Trace} (each packet as field 1) and ReadBuffers' slices (each packet's
 * bytes alone, cut into slices, the last one marked): the service cuts, a consumer glues.
 */
final class TracePackets {
    private TracePackets() {
    }

    /** Where {@link SliceWriter} puts each ReadBuffers reply, serialized; the last ends the stream. */
    @FunctionalInterface
    interface ReplySink {
        void accept(byte[] readBuffersResponse, boolean last);
    }

    /** Sends the packets of {@code trace} as the replies of a ReadBuffers invocation. */
    static SliceWriter replies(Invocation invocation) {
        return new SliceWriter((reply, last) -> {
            if (last) {
                invocation.reply(reply);
            } else {
                invocation.replyMore(reply);
            }
        });
    }

    /** The packets of a whole {@code trace} as ReadBuffers replies. */
    static void cutIntoSlices(byte[] trace, ReplySink sink) {
        SliceWriter writer = new SliceWriter(sink);
        writer.write(ByteBuffer.wrap(trace));
        writer.finish();
    }

    /**
     * Takes a {@code Trace} as the service's readback writes it, and cuts its packets into
     * ReadBuffers replies as they come, so that a large trace is never held whole: each
     * reply's slices under {@link ConsumerPort#MAX_READ_REPLY} by Perfetto's estimate (16
     * bytes of overhead a slice), a packet longer than {@link ConsumerPort#MAX_SLICE} cut
     * into several slices. Bytes of a packet not complete yet wait for the next write.
     * {@link #finish()} sends the last reply, which may be empty.
     */
    static final class SliceWriter implements WritableByteChannel {
        private final ReplySink sink;
        private final ByteArrayOutputStream pending = new ByteArrayOutputStream();
        private HeapBuffered<ReadBuffersResponse> reply = new HeapBuffered<>(ReadBuffersResponse.FACTORY);
        private long replySize;
        private boolean replyHasSlices;
        private boolean finished;

        SliceWriter(ReplySink sink) {
            this.sink = sink;
        }

        @Override
        public int write(ByteBuffer source) {
            int length = source.remaining();
            byte[] bytes = new byte[length];
            source.get(bytes);
            pending.writeBytes(bytes);
            byte[] all = pending.toByteArray();
            ProtoDecoder packets = new ProtoDecoder().reset(MemorySegment.ofArray(all));
            long consumed = 0;
            while (packets.next()) {
                ProtoField field = packets.field();
                consumed = packets.position();
                if (field.id() == Trace.PACKET_FIELD_NUMBER && field.wireType() == ProtoWire.WIRE_TYPE_LENGTH_DELIMITED) {
                    add(field.asSlice());
                }
            }
            pending.reset();
            pending.write(all, (int) consumed, all.length - (int) consumed);
            return length;
        }

        private void add(MemorySegment packet) {
            long offset = 0;
            do {
                long size = Math.min(packet.byteSize() - offset, ConsumerPort.MAX_SLICE);
                long approx = size + 16;
                if (replyHasSlices && replySize + approx > ConsumerPort.MAX_READ_REPLY) {
                    sink.accept(reply.toByteArray(), false);
                    reply = new HeapBuffered<>(ReadBuffersResponse.FACTORY);
                    replySize = 0;
                }
                replySize += approx;
                replyHasSlices = true;
                ReadBuffersResponse.Slice slice = reply.get().addSlices();
                slice.setData(packet.asSlice(offset, size));
                offset += size;
                slice.setLastSliceForPacket(offset == packet.byteSize());
            } while (offset < packet.byteSize());
        }

        /** Sends the last reply; bytes of an unfinished packet, which the service never leaves, are dropped. */
        void finish() {
            if (!finished) {
                finished = true;
                sink.accept(reply.toByteArray(), true);
            }
        }

        @Override
        public boolean isOpen() {
            return !finished;
        }

        @Override
        public void close() {
            finish();
        }
    }

    /** The {@code trace_uuid} of a trace the service wrote, into {@code uuid} (msb, lsb); left as is if none. */
    static void traceUuid(byte[] trace, long[] uuid) {
        ProtoDecoder packets = new ProtoDecoder().reset(MemorySegment.ofArray(trace));
        TracePacket.Decoder packet = new TracePacket.Decoder();
        TraceUuid.Decoder traceUuid = new TraceUuid.Decoder();
        while (packets.next()) {
            if (packets.field().id() != Trace.PACKET_FIELD_NUMBER) {
                continue;
            }
            packet.reset(packets.field());
            if (!packet.hasError() && packet.traceUuid(traceUuid) && !traceUuid.hasError()) {
                uuid[0] = traceUuid.msb();
                uuid[1] = traceUuid.lsb();
                return;
            }
        }
    }
}
