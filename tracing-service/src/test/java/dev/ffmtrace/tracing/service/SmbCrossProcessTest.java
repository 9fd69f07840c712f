package dev.ffmtrace.tracing.service;

import static dev.ffmtrace.tracing.smb.abi.SharedMemoryAbiDescriptor.*;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.memory.ListeningSocket;
import dev.ffmtrace.memory.StreamSocket;
import dev.ffmtrace.memory.testing.CPrograms;
import dev.ffmtrace.memory.testing.Peers;
import dev.ffmtrace.tracing.service.InProcessService.ReadPacket;
import dev.ffmtrace.tracing.service.reader.SharedMemoryReader;
import dev.ffmtrace.tracing.smb.BufferExhaustedPolicy;
import dev.ffmtrace.tracing.smb.SharedMemoryArbiter;
import dev.ffmtrace.tracing.smb.TraceWriter;
import java.io.ByteArrayOutputStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The SMB shared with a C process, both ways: the C tool ({@code native/src/smb_tool.c}) writes
 * packets that the Java service side reads back through TraceBufferV2, and the C tool
 * scans an SMB that Java TraceWriters filled.
 */
class SmbCrossProcessTest {
    /** The tool, or the tool built with ASan and UBSan (a finding fails its run on the status). */
    private static Path tool(boolean sanitized) {
        return sanitized ? CPrograms.sanitized("smb_tool") : CPrograms.program("smb_tool");
    }

    private static UnixAddress uniqueAddress() {
        return UnixAddress.abstractName("ffmtrace-smb-" + ProcessHandle.current().pid() + "-" + System.nanoTime());
    }

    /** The packets {@code smb_tool produce} writes for a seed: the same xorshift32 sequence. */
    static List<byte[]> generatedPackets(int count, int seed, int maxSize) {
        List<byte[]> packets = new ArrayList<>();
        int state = seed == 0 ? 1 : seed;
        for (int k = 0; k < count; k++) {
            state ^= state << 13;
            state ^= state >>> 17;
            state ^= state << 5;
            int size = (int) (Integer.toUnsignedLong(state) % (maxSize + 1));
            byte[] packet = new byte[size];
            for (int i = 0; i < size; i++) {
                packet[i] = (byte) (k * 131 + i * 7 + seed);
            }
            packets.add(packet);
        }
        return packets;
    }

    @ParameterizedTest(name = "page {0}, layout {1}, shrink {2}, max packet {3}, sanitized {4}")
    @CsvSource({
        "4096, 1, 0, 100, false",
        "4096, 1, 1, 9000, false",
        "16384, 3, 1, 40000, false",
        "65536, 5, 0, 20000, false",
        "8192, 4, 1, 3000, false",
        "4096, 1, 1, 9000, true",
    })
    void packetsWrittenByACProducerAreReadBackBitForBit(int pageSize, int layout, int shrink, int maxPacket,
                                                        boolean sanitized) throws Exception {
        int packets = 3000;
        int seed = 12345 + layout;
        try (InProcessService service = new InProcessService(16 * pageSize, pageSize, 64 << 20);
             ListeningSocket server = ListeningSocket.listen(uniqueAddress(), 1)) {
            Peers.Peer producer = Peers.startNative(tool(sanitized), "produce", server.address().toString(),
                    Integer.toString(pageSize), Integer.toString(16 * pageSize), "77", Integer.toString(packets),
                    Integer.toString(seed), Integer.toString(maxPacket), Integer.toString(layout), Integer.toString(shrink));
            try (StreamSocket connection = server.accept()) {
                connection.send(new byte[] {'S'}, service.memory.fd());
                SharedMemoryReader.ChunkSink sink = (w, id, p, complete, smb, off, size) -> service.buffer.copyChunkUntrusted(
                        InProcessService.chunk(InProcessService.PRODUCER_ID, w, id, p, complete), smb, off, size);
                List<ReadPacket> read = new ArrayList<>();
                // The SMB holds 16 pages: the service must keep freeing chunks while the producer writes.
                while (producer.process().isAlive()) {
                    if (service.reader.moveCompleteChunks(sink) == 0) {
                        Thread.onSpinWait();
                    }
                    read.addAll(service.readAll());
                }
                producer.awaitSuccess();
                service.reader.drainCompleteChunks(sink);
                read.addAll(service.readAll());
                // Empty packets are skipped by the buffer, as by Perfetto's.
                List<byte[]> expected = generatedPackets(packets, seed, maxPacket).stream()
                        .filter(p -> p.length > 0).toList();
                assertEquals(expected.size(), read.size());
                for (int i = 0; i < expected.size(); i++) {
                    assertEquals(77, read.get(i).writerId());
                    assertEquals(0, read.get(i).droppedReasons(), "packet " + i);
                    assertArrayEquals(expected.get(i), read.get(i).bytes(), "packet " + i);
                }
                assertEquals(0, service.reader.abiViolations());
                assertEquals(0, service.buffer.stats().abiViolations());
            }
        }
    }

    @ParameterizedTest(name = "page {0}, layout {1}, sanitized {2}")
    @CsvSource({"4096, 1, false", "16384, 3, false", "65536, 5, false", "16384, 3, true"})
    void theCScannerReadsWhatJavaWritersWrote(int pageSize, int layout, boolean sanitized) throws Exception {
        int pages = 64;
        try (InProcessService service = new InProcessService(pages * pageSize, pageSize, 1 << 16);
             ListeningSocket server = ListeningSocket.listen(uniqueAddress(), 1)) {
            // Nothing is moved to the service: complete chunks stay in the SMB for the
            // scanner. Patches are kept to apply to what the scanner prints.
            List<int[]> patches = new ArrayList<>();
            SharedMemoryArbiter arbiter = new SharedMemoryArbiter(service.abi.segment(), service.abi.pageSize(), chunksPerLayout(layout), request -> {
                for (int i = 0; i < request.patches(); i++) {
                    patches.add(new int[] {request.patchWriterId(i), request.patchChunkId(i), request.patchOffset(i),
                            request.patchData(i)});
                }
            }, java.time.Duration.ofSeconds(1));
            Map<Integer, List<byte[]>> written = new TreeMap<>();
            List<TraceWriter<TestPacket>> writers = List.of(
                    arbiter.createTraceWriter(0, BufferExhaustedPolicy.DROP, new TestPacket()),
                    arbiter.createTraceWriter(0, BufferExhaustedPolicy.DROP, new TestPacket()));
            for (int i = 0; i < 300; i++) {
                TraceWriter<TestPacket> writer = writers.get(i % 2);
                byte[] payload = TraceWriterTest.pattern((i * 97) % (pageSize / 4), i);
                TraceWriterTest.write(writer.newTracePacket(), payload, i % 3);
                writer.finishTracePacket();
                written.computeIfAbsent(writer.writerId(), k -> new ArrayList<>()).add(TraceWriterTest.contiguous(payload, i % 3));
            }
            writers.forEach(TraceWriter::flush);
            assertTrue(writers.stream().allMatch(w -> w.packetsDropped() == 0 && w.fragmentsDropped() == 0),
                    "the SMB is large enough for every packet");

            Peers.Peer scanner = Peers.startNative(tool(sanitized), "scan", server.address().toString(),
                    Integer.toString(pageSize), Integer.toString(pages * pageSize));
            try (StreamSocket connection = server.accept()) {
                connection.send(new byte[] {'S'}, service.memory.fd());
                connection.receive(new byte[1], 0);
            }
            Map<Integer, List<byte[]>> scanned = reassemble(scanner.awaitSuccess(), patches);
            assertTrue(patches.size() > 10, "packets with nested messages crossed chunks: " + patches.size());
            assertEquals(written.keySet(), scanned.keySet());
            for (int writerId : written.keySet()) {
                List<byte[]> expected = written.get(writerId);
                List<byte[]> actual = scanned.get(writerId);
                assertEquals(expected.size(), actual.size(), "packets of writer " + writerId);
                for (int i = 0; i < expected.size(); i++) {
                    assertArrayEquals(WireCanonical.of(expected.get(i)), WireCanonical.of(actual.get(i)),
                            "writer " + writerId + " packet " + i);
                }
            }
        }
    }

    /**
     * Rebuilds packets from the scanner's lines: each patch {writer, chunk, payload
     * offset, 4 bytes} is applied to the fragment holding that offset, then chunks are
     * taken per writer in chunk id order and fragments joined by the continuation flags.
     * A patch that lands outside every fragment fails the test.
     */
    static Map<Integer, List<byte[]>> reassemble(String scan, List<int[]> patches) {
        record Chunk(int id, int flags, List<byte[]> fragments, List<Integer> offsets) {
        }
        Map<Integer, TreeMap<Integer, Chunk>> chunks = new TreeMap<>();
        Map<String, Chunk> byPosition = new TreeMap<>();
        for (String line : scan.split("\n")) {
            String[] f = line.split(" ");
            if (f[0].equals("chunk") && f[4].equals("3")) {
                Chunk chunk = new Chunk(Integer.parseInt(f[6]), Integer.parseInt(f[12]), new ArrayList<>(), new ArrayList<>());
                chunks.computeIfAbsent(Integer.parseInt(f[8]), k -> new TreeMap<>()).put(chunk.id(), chunk);
                byPosition.put(f[1] + "/" + f[2], chunk);
            } else if (f[0].equals("fragment")) {
                byte[] bytes = f.length > 6 ? HexFormat.of().parseHex(f[6]) : new byte[0];
                Chunk chunk = byPosition.get(f[1] + "/" + f[2]);
                chunk.fragments().add(bytes);
                chunk.offsets().add(Integer.parseInt(f[4]));
            } else if (f[0].equals("bad-fragment")) {
                throw new AssertionError("scanner found a bad fragment: " + line);
            }
        }
        for (int[] patch : patches) {
            Chunk chunk = chunks.getOrDefault(patch[0], new TreeMap<>()).get(patch[1]);
            boolean applied = false;
            for (int i = 0; chunk != null && i < chunk.fragments().size() && !applied; i++) {
                int at = patch[2] - chunk.offsets().get(i);
                byte[] fragment = chunk.fragments().get(i);
                if (at >= 0 && at + 4 <= fragment.length) {
                    for (int b = 0; b < 4; b++) {
                        fragment[at + b] = (byte) (patch[3] >>> (8 * b));
                    }
                    applied = true;
                }
            }
            assertTrue(applied, "patch at offset " + patch[2] + " of chunk " + patch[1] + " lands in a fragment");
        }
        Map<Integer, List<byte[]>> packets = new TreeMap<>();
        for (var entry : chunks.entrySet()) {
            List<byte[]> out = new ArrayList<>();
            ByteArrayOutputStream pending = null;
            for (Chunk chunk : entry.getValue().values()) {
                for (int i = 0; i < chunk.fragments().size(); i++) {
                    byte[] fragment = chunk.fragments().get(i);
                    boolean continues = i == 0 && (chunk.flags() & FLAG_FIRST_PACKET_CONTINUES_FROM_PREV_CHUNK) != 0;
                    if (!continues) {
                        pending = new ByteArrayOutputStream();
                    }
                    pending.writeBytes(fragment);
                    boolean last = i == chunk.fragments().size() - 1;
                    if (!(last && (chunk.flags() & FLAG_LAST_PACKET_CONTINUES_ON_NEXT_CHUNK) != 0)) {
                        out.add(pending.toByteArray());
                    }
                }
            }
            packets.put(entry.getKey(), out);
        }
        return packets;
    }
}
