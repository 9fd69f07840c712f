package dev.ffmtrace.tracing.service.ipc;

import dev.ffmtrace.perfetto.protos.Trace;
import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.perfetto.protos.TraceUuid;
import dev.ffmtrace.protozero.ProtoDecoder;
import java.lang.foreign.MemorySegment;

/** Reading a {@code Trace} the service wrote. */
final class TracePackets {
    private TracePackets() {
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
