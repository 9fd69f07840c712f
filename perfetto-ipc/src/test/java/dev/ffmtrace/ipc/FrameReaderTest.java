package dev.ffmtrace.ipc;

import dev.ffmtrace.memory.MemoryFile;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

class FrameReaderTest {
    private static byte[] payload(int size, int seed) {
        byte[] bytes = new byte[size];
        new SplittableRandom(seed).nextBytes(bytes);
        return bytes;
    }

    private static byte[] concat(byte[]... parts) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (byte[] part : parts) {
            out.writeBytes(part);
        }
        return out.toByteArray();
    }

    /** A copy of the payload of the frame {@code reader} took last. */
    static byte[] payload(FrameReader reader) {
        return reader.payloads().asSlice(reader.payloadOffset(), reader.payloadLength()).toArray(ValueLayout.JAVA_BYTE);
    }

    private static List<byte[]> drain(FrameReader reader) {
        List<byte[]> out = new ArrayList<>();
        while (reader.next()) {
            assertEquals(-1, reader.fd());
            out.add(payload(reader));
        }
        return out;
    }

    private static boolean feed(FrameReader reader, byte[] stream, int from, int to, int fd) {
        byte[] read = java.util.Arrays.copyOfRange(stream, from, to);
        return reader.feed(read, read.length, fd);
    }

    /** A real descriptor, so that the reader closing it is observable and harmless. */
    private static int newFd() {
        try (MemoryFile file = MemoryFile.create("frame-reader-test", 4096)) {
            return MemoryFile.duplicate(file.fd());
        }
    }

    private static boolean isOpen(int fd) {
        return Files.exists(Path.of("/proc/self/fd/" + fd));
    }

    @Test
    void framesSplitByteByByteAndAtRandomComeOutWhole() {
        List<byte[]> payloads = List.of(payload(1, 1), payload(300, 2), payload(Frames.MAX_PAYLOAD, 3), payload(17, 4));
        byte[] stream = concat(payloads.stream().map(Frames::withHeader).toArray(byte[][]::new));

        FrameReader byteByByte = new FrameReader();
        List<byte[]> got = new ArrayList<>();
        for (int i = 0; i < stream.length; i++) {
            assertTrue(feed(byteByByte, stream, i, i + 1, -1));
            got.addAll(drain(byteByByte));
        }
        assertEquals(payloads.size(), got.size());
        for (int i = 0; i < payloads.size(); i++) {
            assertArrayEquals(payloads.get(i), got.get(i));
        }
        assertEquals(0, byteByByte.buffered());

        SplittableRandom random = new SplittableRandom(7);
        for (int round = 0; round < 20; round++) {
            FrameReader reader = new FrameReader();
            got.clear();
            int at = 0;
            while (at < stream.length) {
                int end = Math.min(stream.length, at + 1 + random.nextInt(70_000));
                assertTrue(feed(reader, stream, at, end, -1));
                got.addAll(drain(reader));
                at = end;
            }
            assertEquals(payloads.size(), got.size());
            for (int i = 0; i < payloads.size(); i++) {
                assertArrayEquals(payloads.get(i), got.get(i));
            }
        }
    }

    @Test
    void oneStreamLargerThanTheBufferInOneReadIsCutIntoFrames() {
        byte[] stream = concat(Frames.withHeader(payload(Frames.MAX_PAYLOAD, 5)),
                Frames.withHeader(payload(Frames.MAX_PAYLOAD, 6)), Frames.withHeader(payload(9, 7)));
        FrameReader reader = new FrameReader();
        assertTrue(reader.feed(stream, stream.length, -1));
        List<byte[]> got = drain(reader);
        assertEquals(3, got.size());
        assertArrayEquals(payload(9, 7), got.get(2));
    }

    @Test
    void aFrameOverKipcBufferSizeIsAViolationEvenBeforeItsBytesArrive() {
        // Perfetto: header + payload must fit in the 128 KiB receive buffer.
        assertEquals(128 * 1024, Frames.IPC_BUFFER_SIZE);
        byte[] header = {(byte) 0xfd, (byte) 0xff, 0x01, 0x00}; // 131069 = MAX_PAYLOAD + 1
        FrameReader reader = new FrameReader();
        assertFalse(reader.feed(header, 4, -1));
        assertNotNull(reader.violation());

        FrameReader huge = new FrameReader();
        byte[] max = {(byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff};
        assertFalse(huge.feed(max, 4, -1));

        FrameReader exact = new FrameReader();
        byte[] fits = {(byte) 0xfc, (byte) 0xff, 0x01, 0x00}; // MAX_PAYLOAD
        assertTrue(exact.feed(fits, 4, -1));
        assertEquals(4, exact.buffered());
    }

    @Test
    void framesNotTakenBeforeTheNextReadAreKept() {
        byte[] first = Frames.withHeader(payload(10, 14));
        byte[] second = Frames.withHeader(payload(5000, 15));
        FrameReader reader = new FrameReader();
        assertTrue(reader.feed(first, first.length, -1));
        assertTrue(reader.feed(second, second.length, -1));
        List<byte[]> got = drain(reader);
        assertEquals(2, got.size());
        assertArrayEquals(payload(10, 14), got.get(0));
        assertArrayEquals(payload(5000, 15), got.get(1));
        // All taken: the next read starts the store over.
        assertTrue(reader.feed(first, first.length, -1));
        assertTrue(reader.next());
        assertEquals(0, reader.payloadOffset());
        assertArrayEquals(payload(10, 14), payload(reader));
    }

    @Test
    void emptyFramesAreSkipped() {
        byte[] stream = concat(new byte[4], Frames.withHeader(payload(3, 8)), new byte[4]);
        FrameReader reader = new FrameReader();
        assertTrue(reader.feed(stream, stream.length, -1));
        assertEquals(1, drain(reader).size());
        assertEquals(0, reader.buffered());
    }

    @Test
    void aDescriptorBelongsToTheLastFrameStartingInItsRead() {
        byte[] first = Frames.withHeader(payload(10, 9));
        byte[] second = Frames.withHeader(payload(20, 10));
        byte[] stream = concat(first, second);
        FrameReader reader = new FrameReader();
        int fd = newFd();
        // One read with a whole frame, then the start of the frame the descriptor came with.
        assertTrue(feed(reader, stream, 0, first.length + 3, fd));
        assertTrue(reader.next());
        assertEquals(-1, reader.fd());
        assertFalse(reader.next());
        assertTrue(feed(reader, stream, first.length + 3, stream.length, -1));
        assertTrue(reader.next());
        assertEquals(fd, reader.fd());
        assertArrayEquals(payload(20, 10), payload(reader));
        assertTrue(isOpen(fd), "the frame's taker owns it now");
        MemoryFile.attach(fd).close();
    }

    @Test
    void aDescriptorInTheMiddleOfAFrameIsAViolationAndClosed() {
        byte[] frame = Frames.withHeader(payload(40, 11));
        FrameReader reader = new FrameReader();
        assertTrue(feed(reader, frame, 0, 10, -1));
        int fd = newFd();
        assertFalse(feed(reader, frame, 10, 20, fd));
        assertFalse(isOpen(fd));
    }

    @Test
    void aSecondDescriptorForOneFrameIsAViolation() {
        byte[] frame = Frames.withHeader(payload(40, 12));
        FrameReader reader = new FrameReader();
        int first = newFd();
        assertTrue(feed(reader, frame, 0, 2, first));
        int second = newFd();
        assertFalse(feed(reader, frame, 2, 6, second));
        assertFalse(isOpen(second));
        reader.close();
        assertFalse(isOpen(first), "close() closes the descriptor still waiting for its frame");
    }

    @Test
    void closeClosesTheDescriptorsOfFramesNotTaken() {
        byte[] frame = Frames.withHeader(payload(5, 13));
        FrameReader reader = new FrameReader();
        int fd = newFd();
        assertTrue(reader.feed(frame, frame.length, fd));
        reader.close();
        assertFalse(isOpen(fd));
    }
}
