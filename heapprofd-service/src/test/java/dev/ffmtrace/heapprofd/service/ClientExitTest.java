package dev.ffmtrace.heapprofd.service;

import dev.ffmtrace.heapprofd.wire.AllocMetadata;
import dev.ffmtrace.heapprofd.wire.ControlBytes;
import dev.ffmtrace.heapprofd.wire.WireRecords;
import dev.ffmtrace.memory.Layouts;
import dev.ffmtrace.memory.testing.Await;
import dev.ffmtrace.memory.testing.CPrograms;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The exit handshake: a client that says it is exiting has its maps read there and then,
 * and its records unwound against them after the process has gone; the answer does not
 * wait for the reader. The process here is a maps file the test writes: the test
 * program's text mapped only after the handshake, then nothing at all once the "process"
 * has exited.
 */
class ClientExitTest {
    private static final long PROGRAM = 0x5555_5550_0000L;
    private static final long STACK = 0x7ffd_0000_0000L;
    private static final long SP = STACK + 0x8000;
    private static final int HEAP_ID = 0;

    @Test
    void aBacklogReadAfterTheExitIsUnwoundAgainstTheMapsReadWhenTheClientSaidItWasExiting(@TempDir Path dir)
            throws Exception {
        String program = CPrograms.program("heapprofd_pattern").toString();
        long a = ElfFileTest.run("nm", "--defined-only", program).stream()
                .filter(symbol -> symbol.length == 3 && symbol[2].equals("a"))
                .mapToLong(symbol -> Long.parseUnsignedLong(symbol[0], 16)).findFirst().orElseThrow();
        long inode = (Long) Files.getAttribute(Path.of(program), "unix:ino");
        Path maps = stackOnly(dir);
        String stack = Files.readString(maps);

        try (HeapprofdService service = startService();
             HandMadeClient client = HandMadeClient.connect(service.address(), maps)) {
            ClientConnection connection = service.clients().getFirst();
            // The program loaded after the handshake, then the exit said.
            Files.writeString(maps, String.format("%x-%x r-xp 00000000 08:01 %d %s%n", PROGRAM, PROGRAM + 0x5000,
                    inode, program) + stack);
            client.socket.send(new byte[] {ControlBytes.EXITING});
            byte[] answer = new byte[1];
            assertEquals(1, client.socket.receive(answer, 0).bytes());
            assertEquals(ControlBytes.EXIT_READ, answer[0]);
            // Gone: its maps read empty. The backlog comes after, a Malloc at the entry of a().
            Files.writeString(maps, "");
            byte[] record = mallocAt(PROGRAM + a);
            client.write(record, record.length);
            client.socket.shutdown();
            connection.gone().get(30, TimeUnit.SECONDS);

            List<Frame> frames = connection.heaps.get(HEAP_ID).samples(connection.frameNames()).getFirst().frames();
            assertEquals(List.of("a"), frames.stream().map(Frame::name).toList());
            assertEquals(0, connection.unwindingErrors());
        }
    }

    @Test
    void anExitingClientIsAnsweredWhileTheReaderIsHeldUpByItsBacklog(@TempDir Path dir) throws Exception {
        Path maps = stackOnly(dir);
        try (HeapprofdService service = startService();
             HandMadeClient client = HandMadeClient.connect(service.address(), maps)) {
            ClientConnection connection = service.clients().getFirst();
            byte[] malloc = mallocAt(0x1234);
            client.write(malloc, malloc.length);
            Await.until("the first record booked", () -> connection.records() == 1);
            HeapBooks books = connection.heaps.get(HEAP_ID);
            CompletableFuture<Integer> answer;
            // The reader books the next record under the books' lock, which the test holds: a
            // backlog that takes as long as the test likes to unwind.
            synchronized (books) {
                byte[] free = new byte[WireRecords.FREE_RECORD_SIZE];
                WireRecords.writeFree(MemorySegment.ofArray(free), 0, 2, 0x1000, HEAP_ID);
                client.write(free, free.length);
                Await.until("the reader held at the books", () -> Thread.getAllStackTraces().keySet().stream()
                        .anyMatch(thread -> thread.getState() == Thread.State.BLOCKED
                                && thread.getName().equals("heapprofd client")));
                client.socket.send(new byte[] {ControlBytes.EXITING});
                answer = CompletableFuture.supplyAsync(() -> {
                    byte[] bytes = new byte[1];
                    return client.socket.receive(bytes, 0).bytes() == 1 ? (int) bytes[0] : -1;
                });
                assertEquals(ControlBytes.EXIT_READ, answer.get(30, TimeUnit.SECONDS),
                        "answered while the reader was held");
                assertEquals(1, connection.records(), "the free is still being booked");
            }
            client.socket.shutdown();
            connection.gone().get(30, TimeUnit.SECONDS);
            assertEquals(2, connection.records());
        }
    }

    @Test
    void aClientThatSaysItIsExitingTwiceIsAnsweredOnce(@TempDir Path dir) throws Exception {
        Path maps = stackOnly(dir);
        try (HeapprofdService service = startService();
             HandMadeClient client = HandMadeClient.connect(service.address(), maps)) {
            ClientConnection connection = service.clients().getFirst();
            // Maps that read empty, as a process's do once it has gone: nothing to keep, and still one answer.
            Files.writeString(maps, "");
            byte[] answer = new byte[8];
            client.socket.send(new byte[] {ControlBytes.EXITING});
            assertEquals(1, client.socket.receive(answer, 0).bytes());
            client.socket.send(new byte[] {ControlBytes.EXITING});
            // Booked only after the watcher has seen the second EXITING: it came first on the socket.
            byte[] malloc = mallocAt(0x1234);
            client.write(malloc, malloc.length);
            Await.until("the record booked", () -> connection.records() == 1);
            client.socket.shutdown();
            connection.gone().get(30, TimeUnit.SECONDS);
            // What the service sent and the client did not read yet, then the end of the stream.
            assertEquals(0, client.socket.receive(answer, 0).bytes(), "no second answer");
        }
    }

    /** A service that samples every byte, with a ring of 1 MiB. */
    private static HeapprofdService startService() {
        return HeapprofdService.start(HeapprofdServiceTest.address(), HeapprofdServiceTest.everyByte("libc.malloc"),
                1 << 20);
    }

    /** A maps file in {@code dir} with the stack's mapping alone: a process whose code the service cannot place. */
    private static Path stackOnly(Path dir) throws IOException {
        Path maps = dir.resolve("maps");
        Files.writeString(maps, String.format("%x-%x rw-p 00000000 00:00 0 [stack]%n", STACK, STACK + 0x10000));
        return maps;
    }

    /** A Malloc whose registers are at {@code pc} with a stack copy of zeros: the return address 0 ends the walk. */
    private static byte[] mallocAt(long pc) {
        MemorySegment stack = MemorySegment.ofArray(new byte[256]);
        AllocMetadata alloc = new AllocMetadata().arch(AllocMetadata.ARCH_X86_64).stackPointer(SP).heapId(HEAP_ID)
                .allocAddress(0x1000).allocSize(64).sampleSize(64);
        // unwindstack's x86-64 register order: rax rdx rcx rbx rsi rdi rbp rsp r8..r15 rip.
        alloc.registers().set(Layouts.LONG_UNALIGNED, 6 * 8, 0);
        alloc.registers().set(Layouts.LONG_UNALIGNED, 7 * 8, SP);
        alloc.registers().set(Layouts.LONG_UNALIGNED, 16 * 8, pc);
        byte[] record = new byte[(int) WireRecords.mallocRecordSize(stack.byteSize())];
        WireRecords.writeMalloc(MemorySegment.ofArray(record), 0, alloc, stack, 0, stack.byteSize());
        return record;
    }
}
