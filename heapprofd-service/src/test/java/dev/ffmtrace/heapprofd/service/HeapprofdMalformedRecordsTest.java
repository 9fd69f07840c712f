package dev.ffmtrace.heapprofd.service;

import dev.ffmtrace.heapprofd.wire.AllocMetadata;
import dev.ffmtrace.heapprofd.wire.WireRecords;
import dev.ffmtrace.memory.Layouts;
import dev.ffmtrace.memory.Os;
import dev.ffmtrace.memory.testing.Await;
import dev.ffmtrace.memory.testing.Peers;
import dev.ffmtrace.protozero.ProtoWire;
import dev.ffmtrace.shmring.RecordSlot;
import dev.ffmtrace.shmring.SharedRingBuffer;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;

import static dev.ffmtrace.heapprofd.service.HeapprofdCrossProcessTest.assertPatternBooked;
import static dev.ffmtrace.heapprofd.service.HeapprofdCrossProcessTest.closed;
import static dev.ffmtrace.heapprofd.service.HeapprofdServiceTest.address;
import static dev.ffmtrace.heapprofd.service.HeapprofdServiceTest.everyByte;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A hand-made client that makes the real handshake, then writes seeded-random records into
 * its ring, each with its wake-up byte: garbage, unknown types, records shorter than their
 * type, Java stacks that do not decode, valid records with fields drawn at random (sizes
 * negative or huge, any heap id, any architecture and registers), and last a record whose
 * length in the ring lies. The service counts exactly the malformed ones, never throws, and
 * books a well-behaved client in another JVM at the same time exactly.
 */
class HeapprofdMalformedRecordsTest {
    /** Fixed, so that a failure reproduces; the assertion messages name it. */
    private static final long SEED = 0x16_5EEDL;
    private static final int RECORDS = 10_000;
    /** SharedRingBuffer's record header, its length word first, precedes the payload. */
    private static final int RING_RECORD_HEADER_SIZE = 8;

    @Test
    void malformedRecordsAndLyingSizesAreCountedAndAWellBehavedClientIsStillBookedExactly() throws Exception {
        try (HeapprofdService service = HeapprofdService.start(address(), everyByte(HeapprofdPeer.HEAP), 1 << 20)) {
            Peers.Peer peer = Peers.startJvm(HeapprofdPeer.class, service.address().toString(), "pattern");
            try (HandMadeClient fuzzer = HandMadeClient.connect(service.address())) {
                assertEquals(service.configuration(), fuzzer.configuration);
                ClientConnection connection = service.clients().stream().filter(client -> client.pid == Os.pid())
                        .findFirst().orElseThrow();
                Fuzz fuzz = new Fuzz(new Random(SEED));
                for (int i = 0; i < RECORDS; i++) {
                    if (i == RECORDS / 2) {
                        // The rest is written while the well-behaved client is connected too.
                        Await.until(() -> service.clients().stream().anyMatch(client -> client.pid == peer.process().pid())
                                || !peer.process().isAlive());
                    }
                    byte[] record = fuzz.next();
                    fuzzer.write(record, record.length);
                }
                // The service hands the space back only once it has booked every record before it.
                Await.until(() -> fuzzer.ring.readAvailable() == 0 || connection.isClosed());
                String seed = "seed " + Long.toHexString(SEED);
                HeapprofdService.Stats stats = service.processStats().get(connection.process);
                assertEquals(fuzz.expectedRecords, stats.records(), seed);
                assertEquals(fuzz.expectedMalformed, stats.malformed(), seed);
                assertEquals(fuzz.expectedNativeStacks, stats.nativeStacks(), seed);
                assertTrue(fuzz.expectedMalformed > RECORDS / 3, fuzz.expectedMalformed + " malformed of " + RECORDS);

                // A record committed with a length past all the ring holds (-1 as the u32 it is).
                RecordSlot slot = fuzzer.ring.newSlot();
                assertTrue(fuzzer.ring.lock(SharedRingBuffer.LockMode.TRY));
                assertEquals(SharedRingBuffer.WriteResult.OK, fuzzer.ring.beginWrite(slot, 16));
                fuzzer.ring.unlock();
                slot.buffer().set(Layouts.INT, slot.offset() - RING_RECORD_HEADER_SIZE, -1);
                fuzzer.socket.send(new byte[] {1});
                // Nothing after it can be found: counted once, and the client let go.
                Await.until(connection::isClosed);
                assertTrue(connection.ringCorrupt());
                assertEquals(fuzz.expectedMalformed + 1, connection.malformed(), seed);
                assertEquals(fuzz.expectedRecords, connection.records(), seed);
                assertTrue(HeapprofdServiceTest.hungUp(fuzzer.socket), "the service closed the corrupt client's socket");
            }
            Await.until(() -> closed(service, Os.pid()));
            assertEquals("done\n", peer.awaitSuccess());
            long pid = peer.process().pid();
            Await.until(() -> closed(service, pid));
            assertPatternBooked(service, pid);
            assertEquals(List.of(0L), service.clients().stream().filter(client -> client.pid == pid)
                    .map(ClientConnection::malformed).toList());
        }
    }

    /**
     * Records drawn from one Random, and what the service must make of them: how many it
     * reads as records, and how many it counts malformed (a record that is not one, a Java
     * stack that does not decode, a heap past the {@value ClientConnection#MAX_HEAPS} a
     * connection may book into).
     */
    private static final class Fuzz {
        /** Where a HeapName record's 64 bytes of name start: after its type, interval and heap id. */
        private static final long HEAP_NAME_NAME_AT = 8 + 8 + 4;
        // unwindstack's x86-64 register order: rax rdx rcx rbx rsi rdi rbp rsp r8..r15 rip.
        private static final long X86_64_RBP = 6 * 8;
        private static final long X86_64_RSP = 7 * 8;
        private static final long X86_64_RIP = 16 * 8;
        /** A pc in an executable mapping of this process, so that some walks go past their first frame. */
        private static final long MAPPED_PC = Linker.nativeLinker().defaultLookup().find("malloc").orElseThrow().address();

        private final Random random;
        long expectedRecords;
        long expectedMalformed;
        long expectedNativeStacks;
        /** The Java frames the connection has defined, as the service's decoder keeps them. */
        private int javaFrames;
        private final Set<Integer> heaps = new HashSet<>();

        Fuzz(Random random) {
            this.random = random;
        }

        byte[] next() {
            return switch (random.nextInt(8)) {
                case 0 -> malformed(garbage());
                case 1 -> malformed(unknownType());
                case 2 -> malformed(truncated());
                case 3 -> javaMallocWithBadStack();
                case 4 -> javaMalloc();
                case 5 -> free();
                case 6 -> heapName();
                default -> nativeMalloc();
            };
        }

        private byte[] malformed(byte[] record) {
            expectedMalformed++;
            return record;
        }

        /** A record read, booked into heap {@code heapId}: a heap past the bound is counted. */
        private void booked(int heapId) {
            expectedRecords++;
            if (!heaps.contains(heapId)) {
                if (heaps.size() == ClientConnection.MAX_HEAPS) {
                    expectedMalformed++;
                } else {
                    heaps.add(heapId);
                }
            }
        }

        private int heapId() {
            return 1 + random.nextInt(ClientConnection.MAX_HEAPS + 16);
        }

        private byte[] bytes(int length) {
            byte[] bytes = new byte[length];
            random.nextBytes(bytes);
            return bytes;
        }

        /** Random bytes; a first word that would be a record type is made one that is not. */
        private byte[] garbage() {
            byte[] record = bytes(1 + random.nextInt(600));
            if (record.length >= 8) {
                record[7] |= 0x40;
            }
            return record;
        }

        private byte[] unknownType() {
            long[] types = {3, 4, 255, -1, Long.MIN_VALUE, random.nextLong() | 1L << 40};
            byte[] record = bytes(8 + random.nextInt(400));
            MemorySegment.ofArray(record).set(Layouts.LONG_UNALIGNED, 0, types[random.nextInt(types.length)]);
            return record;
        }

        /** A Free, Malloc or HeapName record shorter than its type's body. */
        private byte[] truncated() {
            int type = random.nextInt(3);
            int full = switch (type) {
                case 0 -> WireRecords.FREE_RECORD_SIZE;
                case 1 -> WireRecords.MALLOC_RECORD_HEADER_SIZE;
                default -> WireRecords.HEAP_NAME_RECORD_SIZE;
            };
            byte[] record = bytes(8 + random.nextInt(full - 8));
            MemorySegment.ofArray(record).set(Layouts.LONG_UNALIGNED, 0, type);
            return record;
        }

        /** Metadata with every field drawn at random, sizes negative and huge included. */
        private AllocMetadata metadata(int heapId, int arch) {
            AllocMetadata metadata = new AllocMetadata().sequenceNumber(random.nextLong()).allocSize(random.nextLong())
                    .sampleSize(random.nextBoolean() ? random.nextLong() : random.nextInt(1 << 20))
                    .allocAddress(random.nextLong()).stackPointer(random.nextLong()).timestampNanos(random.nextLong())
                    .heapId(heapId).arch(arch);
            metadata.registers().copyFrom(MemorySegment.ofArray(bytes((int) metadata.registers().byteSize())));
            return metadata;
        }

        private static byte[] malloc(AllocMetadata metadata, byte[] stack) {
            byte[] record = new byte[(int) WireRecords.mallocRecordSize(stack.length)];
            WireRecords.writeMalloc(MemorySegment.ofArray(record), 0, metadata, MemorySegment.ofArray(stack), 0,
                    stack.length);
            return record;
        }

        /** Whether the service refuses the Malloc whole: a sample larger than any process can allocate. */
        private static boolean sampleRefused(AllocMetadata metadata) {
            return Long.compareUnsigned(metadata.sampleSize(), ClientConnection.MAX_SAMPLE_BYTES) > 0;
        }

        /** A Java stack of up to 6 frames, each one defined before or defined here. */
        private byte[] javaMalloc() {
            int heapId = heapId();
            AllocMetadata metadata = metadata(heapId, AllocMetadata.ARCH_JAVA);
            int definedBefore = javaFrames;
            ByteArrayOutputStream stack = new ByteArrayOutputStream();
            int frames = random.nextInt(7);
            for (int i = 0; i < frames; i++) {
                if (javaFrames > 0 && random.nextBoolean()) {
                    varint(stack, (long) random.nextInt(javaFrames) << 1);
                } else {
                    define(stack, javaFrames++);
                }
            }
            if (sampleRefused(metadata)) {
                // The service never reads the stack: its definitions are not made.
                javaFrames = definedBefore;
                return malformed(malloc(metadata, stack.toByteArray()));
            }
            booked(heapId);
            return malloc(metadata, stack.toByteArray());
        }

        private void define(ByteArrayOutputStream stack, long id) {
            byte[] name = ("Fuzz.f" + id + "(Fuzz.java:" + random.nextInt(1000) + ")").getBytes(StandardCharsets.UTF_8);
            varint(stack, id << 1 | 1);
            varint(stack, name.length);
            stack.writeBytes(name);
        }

        /**
         * A Java stack that starts well (its definitions taken back with it) and then is not
         * one: a varint that does not end, an id not defined, a definition out of turn, a
         * name whose length lies (past the payload, huge, negative) or is too long, too many frames.
         */
        private byte[] javaMallocWithBadStack() {
            ByteArrayOutputStream stack = new ByteArrayOutputStream();
            int defined = javaFrames;
            for (int i = random.nextInt(3); i > 0; i--) {
                define(stack, defined++);
            }
            switch (random.nextInt(6)) {
                case 0 -> stack.writeBytes(unterminatedVarint());
                case 1 -> varint(stack, (defined + (long) random.nextInt(1 << 20)) << 1);
                case 2 -> {
                    varint(stack, (defined + 1 + (long) random.nextInt(100)) << 1 | 1);
                    varint(stack, 3);
                    stack.writeBytes(bytes(3));
                }
                case 3 -> {
                    varint(stack, (long) defined << 1 | 1);
                    long[] lies = {10 + random.nextInt(4096), 1L << (32 + random.nextInt(30)), -1 - random.nextInt(1 << 20),
                            Long.MIN_VALUE};
                    varint(stack, lies[random.nextInt(lies.length)]);
                    stack.writeBytes(bytes(random.nextInt(10)));
                }
                case 4 -> {
                    varint(stack, (long) defined << 1 | 1);
                    int length = AllocMetadata.MAX_JAVA_FRAME_NAME_BYTES + 1 + random.nextInt(1000);
                    varint(stack, length);
                    stack.writeBytes(bytes(length));
                }
                default -> {
                    define(stack, defined);
                    for (int i = 0; i < AllocMetadata.MAX_JAVA_STACK_DEPTH; i++) {
                        varint(stack, (long) defined << 1);
                    }
                }
            }
            int heapId = heapId();
            AllocMetadata metadata = metadata(heapId, AllocMetadata.ARCH_JAVA);
            byte[] record = malloc(metadata, stack.toByteArray());
            if (sampleRefused(metadata)) {
                return malformed(record);
            }
            expectedMalformed++;
            booked(heapId);
            return record;
        }

        private byte[] unterminatedVarint() {
            byte[] continues = bytes(1 + random.nextInt(12));
            for (int i = 0; i < continues.length; i++) {
                continues[i] |= (byte) 0x80;
            }
            return continues;
        }

        private byte[] free() {
            byte[] record = bytes(WireRecords.FREE_RECORD_SIZE + random.nextInt(3) * random.nextInt(64));
            int heapId = heapId();
            WireRecords.writeFree(MemorySegment.ofArray(record), 0, random.nextLong(), random.nextLong(), heapId);
            booked(heapId);
            return record;
        }

        /** A HeapName of any heap id, its name 64 random bytes (no NUL maybe, not UTF-8 maybe). */
        private byte[] heapName() {
            byte[] record = bytes(WireRecords.HEAP_NAME_RECORD_SIZE + random.nextInt(3) * random.nextInt(64));
            WireRecords.writeHeapName(MemorySegment.ofArray(record), 0, random.nextLong(), random.nextInt(), new byte[0]);
            MemorySegment.copy(bytes(64), 0, MemorySegment.ofArray(record), ValueLayout.JAVA_BYTE, HEAP_NAME_NAME_AT, 64);
            expectedRecords++;
            return record;
        }

        /**
         * A native Malloc: any architecture, registers and stack copy at random; half of them
         * x86-64 with rip in this process's code and rbp inside the copy, so the walk reads
         * the copy's garbage as frames.
         */
        private byte[] nativeMalloc() {
            int heapId = heapId();
            boolean walks = random.nextBoolean();
            int arch = walks ? AllocMetadata.ARCH_X86_64 : random.nextInt(AllocMetadata.ARCH_JAVA);
            AllocMetadata metadata = metadata(heapId, arch);
            byte[] stack = bytes(random.nextInt(4096));
            if (walks) {
                long sp = metadata.stackPointer() & ~7L;
                metadata.stackPointer(sp);
                metadata.registers().set(Layouts.LONG_UNALIGNED, X86_64_RSP, sp);
                metadata.registers().set(Layouts.LONG_UNALIGNED, X86_64_RBP, sp + 8L * random.nextInt(stack.length / 8 + 1));
                metadata.registers().set(Layouts.LONG_UNALIGNED, X86_64_RIP, MAPPED_PC);
            }
            if (sampleRefused(metadata)) {
                return malformed(malloc(metadata, stack));
            }
            expectedNativeStacks++;
            booked(heapId);
            return malloc(metadata, stack);
        }

        private static void varint(ByteArrayOutputStream out, long value) {
            byte[] bytes = new byte[10];
            out.write(bytes, 0, ProtoWire.writeVarInt(bytes, 0, value));
        }
    }
}
