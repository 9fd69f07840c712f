package dev.ffmtrace.heapprofd.service;

import dev.ffmtrace.heapprofd.wire.AllocMetadata;
import dev.ffmtrace.heapprofd.wire.WireFormatException;
import dev.ffmtrace.heapprofd.wire.WireRecord;
import dev.ffmtrace.memory.NativeException;
import dev.ffmtrace.memory.Os;
import dev.ffmtrace.memory.UnixSocket;
import dev.ffmtrace.shmring.RecordSlot;
import dev.ffmtrace.shmring.SharedRingBuffer;

import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * One client after its handshake, owned by one thread: on each wake-up byte it reads the
 * ring until there is nothing left, unwinds each record and books it; when the socket
 * closes (the client exited or stopped) it reads what is left and lets go of the ring and
 * of the client's {@code /proc/PID/maps} and {@code mem} fds. A record that is not one, or
 * a Java stack that does not decode, is counted and skipped; a native stack that does not
 * unwind whole is booked with what did, under an {@code ERROR} frame, and counted: a
 * client that writes garbage costs only its own books.
 */
final class ClientConnection implements Runnable {
    private static final String UNKNOWN_FRAME = "[unknown]";
    /** More than any process's maps: a client cannot make the service read without bound. */
    private static final int MAX_MAPS_BYTES = 16 << 20;

    /** How the profile names the process: its command name, read once at the handshake, and pid. */
    final String process;
    final HeapBooks books = new HeapBooks();
    private final UnixSocket socket;
    private final SharedRingBuffer ring;
    private final int mapsFd;
    private final int memFd;
    private final JavaStackDecoder javaStacks = new JavaStackDecoder();
    private final Unwinder unwinder;
    private final WireRecord record = new WireRecord();
    /** The names the client gave its heaps, by heap id. */
    final Map<Integer, String> heapNames = new ConcurrentHashMap<>();
    private volatile long records;
    private volatile long malformed;
    private volatile long nativeStacks;
    private volatile long unwindingErrors;

    /**
     * Takes ownership of the socket, the ring and the client's /proc fds; reads the client's
     * maps while it waits for its configuration, so that even a client that exits at once
     * has its mappings known. Made on the thread that runs it.
     */
    ClientConnection(String process, UnixSocket socket, SharedRingBuffer ring, int mapsFd, int memFd) {
        this.process = process;
        this.socket = socket;
        this.ring = ring;
        this.mapsFd = mapsFd;
        this.memFd = memFd;
        this.unwinder = new Unwinder(this::readMaps, memFd, System::nanoTime);
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
            socket.close();
            release();
        }
    }

    /** Lets go of the ring, the unwinder and the client's /proc fds; the socket is its owner's to close. */
    void release() {
        ring.close();
        unwinder.close();
        Os.closeFd(mapsFd);
        Os.closeFd(memFd);
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
                List<String> stack;
                if (alloc.arch() == AllocMetadata.ARCH_JAVA) {
                    stack = javaStacks.decode(record.stack());
                    if (stack == null) {
                        malformed++;
                        stack = List.of(UNKNOWN_FRAME);
                    }
                } else {
                    stack = unwind(alloc);
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

    private List<String> unwind(AllocMetadata alloc) {
        List<String> stack = unwinder.unwind(alloc, record.stack());
        nativeStacks = unwinder.stacks();
        unwindingErrors = unwinder.errors();
        return stack;
    }

    /** The client's maps, read again from the start; null once they cannot be read (the process has exited). */
    private byte[] readMaps() {
        try {
            return Os.readFile(mapsFd, MAX_MAPS_BYTES);
        } catch (NativeException e) {
            return null;
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

    /** Native stacks unwound so far. */
    long nativeStacks() {
        return nativeStacks;
    }

    /** Native stacks whose walk failed before its end, so far. */
    long unwindingErrors() {
        return unwindingErrors;
    }
}
