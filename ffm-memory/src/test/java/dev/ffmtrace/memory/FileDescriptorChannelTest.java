package dev.ffmtrace.memory;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.memory.internal.Native;
import dev.ffmtrace.memory.testing.Syscalls;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class FileDescriptorChannelTest {
    @TempDir
    Path dir;

    @Test
    void writesEveryByteInOrderAcrossManyCopies() throws IOException {
        Path file = Files.createFile(dir.resolve("out"));
        byte[] data = new byte[200_000];
        new Random(7).nextBytes(data);
        try (FileDescriptorChannel channel = FileDescriptorChannel.openForWriting(file)) {
            ByteBuffer heap = ByteBuffer.wrap(data, 0, 150_000);
            assertEquals(150_000, channel.write(heap));
            assertFalse(heap.hasRemaining());
            ByteBuffer direct = ByteBuffer.allocateDirect(50_000).put(data, 150_000, 50_000).flip();
            assertEquals(50_000, channel.write(direct));
        }
        assertArrayEquals(data, Files.readAllBytes(file));
    }

    @Test
    void adoptedDescriptorIsWrittenAtItsOwnOffsetAndClosedOnce() throws IOException {
        Path file = dir.resolve("adopted");
        Files.write(file, "head:".getBytes());
        int fd = Native.open(file.toString(), Native.O_WRONLY | Native.O_CLOEXEC | 0x400 /* O_APPEND */, 0);
        FileDescriptorChannel channel = FileDescriptorChannel.adopt(fd);
        channel.write(ByteBuffer.wrap("tail".getBytes()));
        channel.close();
        channel.close();
        assertEquals("head:tail", Files.readString(file));
        assertThrows(ClosedChannelException.class, () -> channel.write(ByteBuffer.wrap(new byte[1])));
    }

    @Test
    void failedWriteIsAnIoExceptionNamingTheErrno() {
        try (FileDescriptorChannel full = FileDescriptorChannel.openForWriting(Path.of("/dev/full"))) {
            IOException e = assertThrows(IOException.class, () -> full.write(ByteBuffer.wrap(new byte[10])));
            assertEquals("ENOSPC", ((NativeException) e.getCause()).errnoName());
        }
        assertThrows(NativeException.class, () -> FileDescriptorChannel.openForWriting(dir.resolve("missing")));
    }

    private Path fifo() throws Exception {
        Path fifo = dir.resolve("fifo");
        assertEquals(0, new ProcessBuilder("mkfifo", fifo.toString()).start().waitFor());
        return fifo;
    }

    @Test
    void aPipeNobodyReadsFailsTheWriteAfterItsTimeout() throws Exception {
        Path fifo = fifo();
        // A reader that never reads (O_NONBLOCK, 0x800: its open does not wait for a writer).
        int reader = Native.open(fifo.toString(), Native.O_CLOEXEC | 0x800, 0);
        try (FileDescriptorChannel channel = FileDescriptorChannel.adopt(
                Native.open(fifo.toString(), Native.O_WRONLY | Native.O_CLOEXEC, 0), Duration.ofMillis(200))) {
            IOException timedOut = assertThrows(IOException.class, () -> channel.write(ByteBuffer.allocate(1 << 20)));
            assertTrue(timedOut.getMessage().contains("took no bytes for 200 ms"), timedOut.getMessage());
        } finally {
            Native.close(reader);
        }
    }

    @Test
    void aShortenedTimeoutEndsAWriteThatWaitsNow() throws Exception {
        Path fifo = fifo();
        int reader = Native.open(fifo.toString(), Native.O_CLOEXEC | 0x800, 0);
        try (FileDescriptorChannel channel = FileDescriptorChannel.adopt(
                Native.open(fifo.toString(), Native.O_WRONLY | Native.O_CLOEXEC, 0), Duration.ofHours(1))) {
            AtomicInteger writerTid = new AtomicInteger();
            CompletableFuture<IOException> write = CompletableFuture.supplyAsync(() -> {
                writerTid.set(Os.tid());
                return assertThrows(IOException.class, () -> channel.write(ByteBuffer.allocate(1 << 20)));
            });
            // Once the pipe is full the write waits in poll, with an hour to go.
            while (writerTid.get() == 0) {
                Thread.onSpinWait();
            }
            Syscalls.awaitBlockedIn(Os.pid(), writerTid.get(), Syscalls.Call.POLL);
            channel.shortenWriteTimeout(Duration.ofMillis(50));
            IOException timedOut = write.get(60, TimeUnit.SECONDS);
            assertTrue(timedOut.getMessage().contains("took no bytes for 50 ms"), timedOut.getMessage());
            channel.shortenWriteTimeout(Duration.ofHours(2));
            IOException next = assertThrows(IOException.class, () -> channel.write(ByteBuffer.allocate(1)));
            assertTrue(next.getMessage().contains("took no bytes for 50 ms"), "only ever shortened: " + next.getMessage());
        } finally {
            Native.close(reader);
        }
    }

    @Test
    void aPipeWithAReaderGetsEveryByteInOrderUnderATimeout() throws Exception {
        Path fifo = fifo();
        byte[] data = new byte[300_000];
        new Random(11).nextBytes(data);
        CompletableFuture<byte[]> read = CompletableFuture.supplyAsync(() -> {
            try {
                return Files.readAllBytes(fifo);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        });
        try (FileDescriptorChannel channel = FileDescriptorChannel.adopt(
                Native.open(fifo.toString(), Native.O_WRONLY | Native.O_CLOEXEC, 0), Duration.ofSeconds(30))) {
            assertEquals(data.length, channel.write(ByteBuffer.wrap(data)));
        }
        assertArrayEquals(data, read.get(30, TimeUnit.SECONDS));
    }
}
