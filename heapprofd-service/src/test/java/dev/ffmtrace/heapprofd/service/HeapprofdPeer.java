package dev.ffmtrace.heapprofd.service;

import dev.ffmtrace.heapprofd.client.HeapprofdClient;
import dev.ffmtrace.heapprofd.client.ProfiledArena;
import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.shmring.SharedRingBuffer;

import java.lang.foreign.Arena;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The second JVM of the cross-process tests, a heapprofd client of the service in the
 * test's JVM, on heap {@value #HEAP} at the service's interval:
 *
 * <pre>HeapprofdPeer @&lt;socket name&gt; pattern|loop|hold-lock &lt;file&gt;</pre>
 *
 * {@code pattern}: {@value #BLOCKS} blocks of {@value #A_BYTES} bytes from {@code a()} and as
 * many of {@value #B_BYTES} from {@code b()}, the first half of b()'s freed, then exits.
 * {@code loop}: allocates {@value #LOOP_BYTES} bytes from {@code churn()} and frees them,
 * for ever. {@code hold-lock}, a hand-made client: books {@value #HELD_BLOCKS} blocks of
 * {@value #HELD_BYTES} bytes under frame {@value #HELD_FRAME}, then reserves a record it
 * never commits, with the ring's spinlock held, writes "holding" into the file and waits
 * for ever.
 */
public final class HeapprofdPeer {
    static final String HEAP = "java.ffm";
    static final int BLOCKS = 100;
    static final int A_BYTES = 1_000;
    static final int B_BYTES = 3_000;
    static final int LOOP_BYTES = 100;
    static final int HELD_BLOCKS = 3;
    static final int HELD_BYTES = 500;
    static final String HELD_FRAME = "Held.before(Held.java:1)";

    private HeapprofdPeer() {
    }

    public static void main(String[] args) throws Exception {
        UnixAddress service = UnixAddress.abstractName(args[0].substring(1));
        if (args[1].equals("hold-lock")) {
            holdLock(service, Path.of(args[2]));
            return;
        }
        try (HeapprofdClient client = HeapprofdClient.connect(service)) {
            int heap = client.registerHeap(HEAP);
            switch (args[1]) {
                case "pattern" -> pattern(client, heap);
                case "loop" -> {
                    for (;;) {
                        try (ProfiledArena arena = new ProfiledArena(Arena.ofConfined(), client, heap)) {
                            churn(arena);
                        }
                    }
                }
                default -> throw new IllegalArgumentException("unknown mode " + args[1]);
            }
        }
    }

    private static void pattern(HeapprofdClient client, int heap) {
        // Never closed: the process exits with a's blocks and b()'s second half unreleased.
        ProfiledArena kept = new ProfiledArena(Arena.ofShared(), client, heap);
        for (int i = 0; i < BLOCKS; i++) {
            a(kept);
        }
        try (ProfiledArena freed = new ProfiledArena(Arena.ofShared(), client, heap)) {
            for (int i = 0; i < BLOCKS; i++) {
                b(i < BLOCKS / 2 ? freed : kept);
            }
        }
        System.out.println("done");
    }

    private static void a(Arena arena) {
        arena.allocate(A_BYTES);
    }

    private static void b(Arena arena) {
        arena.allocate(B_BYTES);
    }

    private static void churn(Arena arena) {
        arena.allocate(LOOP_BYTES);
    }

    private static void holdLock(UnixAddress service, Path holding) throws Exception {
        HandMadeClient client = HandMadeClient.connect(service);
        for (int i = 0; i < HELD_BLOCKS; i++) {
            byte[] record = HandMadeClient.javaMalloc(i + 1, 0x1000 + 0x1000L * i, HELD_BYTES, 1, 0,
                    i == 0 ? HELD_FRAME : null);
            client.write(record, record.length);
        }
        if (!client.ring.lock(SharedRingBuffer.LockMode.TRY)
                || client.ring.beginWrite(client.ring.newSlot(), 400) != SharedRingBuffer.WriteResult.OK) {
            throw new IllegalStateException("cannot reserve a record");
        }
        // beginWrite leaves the lock to its caller: it stays held, over a record never committed.
        client.socket.send(new byte[] {1});
        Files.writeString(holding, "holding");
        Thread.sleep(Long.MAX_VALUE);
    }
}
