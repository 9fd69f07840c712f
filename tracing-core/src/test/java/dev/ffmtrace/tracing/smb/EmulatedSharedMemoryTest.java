package dev.ffmtrace.tracing.smb;

import static dev.ffmtrace.tracing.smb.abi.SharedMemoryAbiDescriptor.*;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.memory.Layouts;
import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.perfetto.protos.TrackEvent;
import java.io.ByteArrayOutputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Shared memory emulation, the producer's side: the buffer is the producer's alone, so
 * a commit must carry each chunk's bytes and the arbiter must free the chunk itself.
 */
class EmulatedSharedMemoryTest {
    private static final int PAGE_SIZE = 4096;

    @Test
    void committedChunksTravelWithTheirBytesAndAreFreeAgainAtOnce() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buffer = arena.allocate(4 * PAGE_SIZE, PAGE_SIZE);
            List<byte[]> sent = new ArrayList<>();
            Map<Integer, byte[]> byChunkId = new HashMap<>();
            SharedMemoryArbiter arbiter = SharedMemoryArbiter.emulated(buffer, PAGE_SIZE, request -> {
                for (int i = 0; i < request.chunksToMove(); i++) {
                    byte[] chunk = request.moveData(i).toArray(ValueLayout.JAVA_BYTE);
                    sent.add(chunk);
                    byChunkId.put(MemorySegment.ofArray(chunk).get(Layouts.INT_UNALIGNED, CHUNK_ID_OFFSET), chunk);
                }
                // What the service does with patches: they name chunks it holds already.
                for (int i = 0; i < request.patches(); i++) {
                    MemorySegment.ofArray(byChunkId.get(request.patchChunkId(i)))
                            .set(Layouts.INT_UNALIGNED, CHUNK_HEADER_SIZE + request.patchOffset(i), request.patchData(i));
                }
            });
            TraceWriter<TracePacket> writer = arbiter.createTraceWriter(1, BufferExhaustedPolicy.DROP);
            List<String> written = new ArrayList<>();
            // Far more than four pages, with packets that span chunks: were a sent chunk
            // not freed, a DROP writer would drop.
            for (int i = 0; i < 2000; i++) {
                String name = "event-" + i + "-" + "p".repeat(i % 10 == 0 ? 6000 : i % 150);
                writer.newTracePacket().setTrackEvent().setName(name);
                writer.finishTracePacket();
                written.add(name);
            }
            writer.close();
            assertEquals(0, writer.packetsDropped());
            assertEquals(0, arbiter.stats().exhaustions());
            assertEquals(written, names(sent, writer.writerId()));
            for (int page = 0; page < 4; page++) {
                assertEquals(0, buffer.get(Layouts.INT_UNALIGNED, (long) page * PAGE_SIZE + PAGE_BITMAP_OFFSET),
                        "page " + page + " is free");
            }
        }
    }

    /** The events in the chunks, in order, fragments joined; each chunk checked to be a whole chunk of {@code writerId}. */
    private static List<String> names(List<byte[]> chunks, int writerId) {
        List<String> names = new ArrayList<>();
        TracePacket.Decoder packet = new TracePacket.Decoder();
        TrackEvent.Decoder event = new TrackEvent.Decoder();
        ByteArrayOutputStream fragments = new ByteArrayOutputStream();
        for (byte[] bytes : chunks) {
            MemorySegment chunk = MemorySegment.ofArray(bytes);
            assertEquals(PAGE_SIZE - PAGE_HEADER_SIZE, bytes.length, "a whole chunk, header included");
            assertEquals(writerId, chunk.get(Layouts.SHORT_UNALIGNED, CHUNK_WRITER_ID_OFFSET));
            int header = chunk.get(Layouts.SHORT_UNALIGNED, CHUNK_PACKETS_OFFSET);
            int count = packetCountOf(header);
            long offset = CHUNK_HEADER_SIZE;
            for (int p = 0; p < count; p++) {
                int size = redundantVarint(chunk, offset);
                fragments.write(bytes, (int) offset + PACKET_HEADER_SIZE, size);
                offset += PACKET_HEADER_SIZE + size;
                boolean continues = p == count - 1 && (flagsOf(header) & FLAG_LAST_PACKET_CONTINUES_ON_NEXT_CHUNK) != 0;
                if (!continues) {
                    packet.reset(MemorySegment.ofArray(fragments.toByteArray()));
                    assertTrue(packet.trackEvent(event));
                    names.add(event.name());
                    fragments.reset();
                }
            }
        }
        return names;
    }

    /** A packet's size field: four bytes of varint, padded with continuation bits. */
    private static int redundantVarint(MemorySegment chunk, long offset) {
        int value = 0;
        for (int i = 0; i < PACKET_HEADER_SIZE; i++) {
            value |= (chunk.get(ValueLayout.JAVA_BYTE, offset + i) & 0x7F) << (7 * i);
        }
        return value;
    }
}
