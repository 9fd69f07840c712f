package dev.ffmtrace.heapprofd.service;

import dev.ffmtrace.heapprofd.wire.AllocMetadata;
import dev.ffmtrace.heapprofd.wire.WireFormatException;
import dev.ffmtrace.heapprofd.wire.WireRecord;
import dev.ffmtrace.memory.UnixSocket;
import dev.ffmtrace.shmring.RecordSlot;
import dev.ffmtrace.shmring.SharedRingBuffer;

import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * One client after its handshake, owned by one thread: on each wake-up byte it reads the
 * ring until there is nothing left, unwinds each record and books it; when the socket
 * closes (the client exited or stopped) it reads what is left and lets go of the ring. A
 * record that is not one, or a stack that does not decode, is counted and skipped: a
 * client that writes garbage costs only its own books.
 */
final class ClientConnection implements Runnable {
    private static final String UNKNOWN_FRAME = "[unknown]";

    /** How the profile names the process: its command name, read once at the handshake, and pid. */
    final String process;
    final HeapBooks books = new HeapBooks();
    private final UnixSocket socket;
    private final SharedRingBuffer ring;
    private final JavaStackDecoder javaStacks = new JavaStackDecoder();
    private final WireRecord record = new WireRecord();
    /** The names the client gave its heaps, by heap id. */
    final Map<Integer, String> heapNames = new ConcurrentHashMap<>();
    private volatile long records;
    private volatile long malformed;

    ClientConnection(String process, UnixSocket socket, SharedRingBuffer ring) {
        this.process = process;
        this.socket = socket;
        this.ring = ring;
    }

    @Override
    public void run() {
        byte[] wakeUps = new byte[4096];
        RecordSlot slot = ring.newSlot();
        try {
            boolean open = true;
            while (open) {
                try {
                    open = socket.receive(wakeUps, 0).bytes() > 0;
                } catch (RuntimeException e) {
                    open = false;
                }
                drain(slot);
            }
        } finally {
            ring.close();
            socket.close();
        }
    }

    private void drain(RecordSlot slot) {
        for (;;) {
            SharedRingBuffer.ReadResult result = ring.beginRead(slot);
            if (result != SharedRingBuffer.ReadResult.OK) {
                if (result == SharedRingBuffer.ReadResult.CORRUPT) {
                    malformed++;
                }
                return;
            }
            try {
                book(record.read(slot.buffer(), slot.offset(), slot.length()));
                records++;
            } catch (WireFormatException e) {
                malformed++;
            } finally {
                ring.endRead(slot);
            }
        }
    }

    private void book(WireRecord.Type type) {
        switch (type) {
            case MALLOC -> {
                AllocMetadata alloc = record.alloc();
                List<String> stack = alloc.arch() == AllocMetadata.ARCH_JAVA ? javaStacks.decode(record.stack()) : null;
                if (stack == null) {
                    if (alloc.arch() == AllocMetadata.ARCH_JAVA) {
                        malformed++;
                    }
                    stack = List.of(UNKNOWN_FRAME);
                }
                books.malloc(alloc.allocAddress(), alloc.sampleSize(), stack);
            }
            case FREE -> books.free(record.freeAddress());
            case HEAP_NAME -> {
                String name = record.heapName();
                if (!name.isEmpty()) {
                    heapNames.put(record.heapId(), name);
                }
            }
        }
    }

    /** Records read and booked so far. */
    long records() {
        return records;
    }

    /** Records or stacks that were not what they claimed, so far. */
    long malformed() {
        return malformed;
    }
}
