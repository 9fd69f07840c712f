package dev.ffmtrace.heapprofd.service;

import dev.ffmtrace.heapprofd.wire.AllocMetadata;
import dev.ffmtrace.heapprofd.wire.ClientConfiguration;
import dev.ffmtrace.heapprofd.wire.ControlBytes;
import dev.ffmtrace.heapprofd.wire.WireFormatException;
import dev.ffmtrace.heapprofd.wire.WireRecord;
import dev.ffmtrace.memory.NativeException;
import dev.ffmtrace.memory.Os;
import dev.ffmtrace.memory.StreamSocket;
import dev.ffmtrace.shmring.RecordSlot;
import dev.ffmtrace.shmring.SharedRingBuffer;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import java.util.function.UnaryOperator;

/**
 * One client after its handshake, served by two threads: the one that runs it reads the
 * ring on each wake-up until there is nothing left, unwinds each record and books it; a
 * second watches the socket, so that a client that says it is exiting
 * ({@link ControlBytes#EXITING}) has its maps read at once, kept for the rest of its
 * records, and is told it may go ({@link ControlBytes#EXIT_READ}) however long its
 * backlog takes to unwind. When the socket ends (the client exited or stopped) the reader
 * reads what is left and lets go of the ring and of the client's {@code /proc/PID/maps}
 * and {@code mem} fds. A record that is not one, or
 * a Java stack that does not decode, is counted and skipped; a native stack that does not
 * unwind whole is booked with what did, under an {@code ERROR} frame, and counted: a
 * client that writes garbage costs only its own books. A corrupt ring, where nothing
 * after the bad record can be found, ends the connection.
 */
final class ClientConnection implements Runnable {
    /** The stack of a Java record that does not decode. */
    private static final List<Frame> UNKNOWN_STACK = List.of(Frame.unknown("[unknown]"));
    /** Heaps a client may book into: as many as its configuration can name. */
    static final int MAX_HEAPS = ClientConfiguration.MAX_HEAPS;
    /** What a heap the client never named is called: the C client's one heap, as Perfetto's malloc hooks name it. */
    static final String DEFAULT_HEAP_NAME = "libc.malloc";
    /**
     * The largest sample booked: x86-64's user address space with five-level paging, the
     * largest of the architectures. A Malloc that claims more is refused, so that a lying
     * client's sizes cannot wrap its books.
     */
    static final long MAX_SAMPLE_BYTES = 1L << 56;
    /** More than any process's maps: a client cannot make the service read without bound. */
    private static final int MAX_MAPS_BYTES = 16 << 20;

    /** How the profile names the process: its command name, read once at the handshake, and pid. */
    final String process;
    /** The process's command name, as the kernel keeps it (at most 15 bytes). */
    final String name;
    final int pid;
    /** The names of the process's JIT-compiled code, read at each dump. */
    private final JitSymbols jitSymbols;
    /** The books of each heap the client booked into, by heap id. */
    final Map<Integer, HeapBooks> heaps = new ConcurrentHashMap<>();
    private final StreamSocket socket;
    private final SharedRingBuffer ring;
    private final int mapsFd;
    private final int memFd;
    private final JavaStackDecoder javaStacks = new JavaStackDecoder();
    private final Unwinder unwinder;
    private final FrameSymbols symbols = new FrameSymbols();
    private final WireRecord record = new WireRecord();
    /**
     * The heap the reader last booked into, and its id: a client books into one heap, or
     * few, and the map lookup was a quarter of a Free's cost. Books are never removed.
     */
    private int lastHeapId;
    private HeapBooks lastBooks;
    /** The names the client gave its heaps, by heap id. */
    private final Map<Integer, String> heapNames = new ConcurrentHashMap<>();
    private volatile long records;
    private volatile long malformed;
    private volatile long nativeStacks;
    private volatile long unwindingErrors;
    private volatile long mapsReparses;
    private volatile SharedRingBuffer.Stats ringStats;
    private volatile boolean ringCorrupt;
    /** The process's maps as it exited, read by the socket's watcher on {@link ControlBytes#EXITING}; null before. */
    private volatile byte[] mapsAtExit;
    /** Set by the socket's watcher for each wake-up, cleared by the reader as it starts reading. */
    private final AtomicBoolean wokenUp = new AtomicBoolean();
    private volatile boolean socketEnded;
    /** Whether the watcher has answered the client's exit; the watcher's own. */
    private boolean exitAnswered;
    /** Completed once the client has gone and every record it wrote is booked. */
    private final CompletableFuture<Void> gone = new CompletableFuture<>();

    /**
     * Takes ownership of the socket, the ring and the client's /proc fds; reads the client's
     * maps while it waits for its configuration, so that even a client that exits at once
     * has its mappings known. Made on the thread that runs it.
     */
    ClientConnection(String name, int pid, int uid, StreamSocket socket, SharedRingBuffer ring, int mapsFd, int memFd,
                     ElfFiles elfFiles) {
        this.name = name;
        this.process = name + " (" + pid + ")";
        this.pid = pid;
        this.jitSymbols = new JitSymbols(JitSymbols.DIRECTORY, pid, uid);
        this.socket = socket;
        this.ring = ring;
        this.mapsFd = mapsFd;
        this.memFd = memFd;
        this.unwinder = new Unwinder(this::readMaps, memFd, System::nanoTime, elfFiles, symbols);
    }

    /**
     * How a dump names the frames booked so far: by the symbols of the ELF files they are
     * in, and JIT-compiled code by the process's perf map as it is now.
     */
    UnaryOperator<Frame> frameNames() {
        PerfMap jitNames = jitSymbols.current();
        return frame -> jitNames.named(symbols.named(frame));
    }

    /**
     * Reads the ring on each wake-up until the socket ends, then once more; a second thread
     * watches the socket ({@link #watchSocket}), so that an exiting client is answered at
     * once, whatever the ring's backlog. Returns once the client has gone.
     */
    @Override
    public void run() {
        Thread reader = Thread.currentThread();
        CompletableFuture<Void> watched = new CompletableFuture<>();
        Thread watcher = Thread.ofPlatform().daemon().name("heapprofd client socket")
                .unstarted(() -> watchSocket(reader, watched));
        try {
            watcher.start();
            RecordSlot slot = ring.newSlot();
            boolean open = true;
            while (open) {
                open = awaitWakeUp();
                if (!drain(slot)) {
                    // The client must see its socket end and stop: it cannot write past a corrupt record.
                    break;
                }
            }
        } finally {
            try {
                socket.shutdown();
                // Not interruptible: the socket is closed only once the watcher is done with it.
                if (watcher.getState() != Thread.State.NEW) {
                    watched.join();
                }
                socket.close();
                release();
            } finally {
                gone.complete(null);
            }
        }
    }

    /**
     * Waits for a wake-up from the socket's watcher: true for one (cleared), false once the
     * socket has ended, after which one last read of the ring is due.
     */
    private boolean awaitWakeUp() {
        while (!wokenUp.getAndSet(false)) {
            if (socketEnded) {
                return false;
            }
            LockSupport.park(this);
        }
        return true;
    }

    /**
     * The socket's watcher: every byte a client sends is a wake-up for {@code reader};
     * {@link ControlBytes#EXITING} also has the process's maps read and the client told
     * ({@link #noticeExit}). Ends with the stream, or when the reader shuts the socket down;
     * then completes {@code watched}.
     */
    private void watchSocket(Thread reader, CompletableFuture<Void> watched) {
        byte[] controlBytes = new byte[4096];
        try {
            for (int received; (received = socket.receive(controlBytes, 0).bytes()) > 0; ) {
                noticeExit(controlBytes, received);
                wokenUp.set(true);
                LockSupport.unpark(reader);
            }
        } catch (RuntimeException e) {
            // A broken socket ends the connection as its end does.
        } finally {
            socketEnded = true;
            LockSupport.unpark(reader);
            watched.complete(null);
        }
    }

    /** Whether the client has gone, or was let go: its socket closed and its ring let go. */
    boolean isClosed() {
        return gone.isDone();
    }

    /** Completes once {@link #isClosed()}: for a caller that waits for the client's last records. */
    CompletableFuture<Void> gone() {
        return gone;
    }

    /**
     * Lets go of the ring, the unwinder and the client's /proc fds; the socket is its owner's
     * to close. The ring is marked shutting down first: a client stops at its next record
     * rather than when a wake-up byte finds the socket closed, which it sends only to a
     * paused reader.
     */
    void release() {
        ring.setShuttingDown();
        ring.close();
        unwinder.close();
        Os.closeFd(mapsFd);
        Os.closeFd(memFd);
    }

    /**
     * Reads the ring until it is empty, then pauses the reader: sets reader_paused, so that
     * the next record's writer sends a wake-up byte, and looks once more for a record
     * committed before that writer could see the flag ({@link SharedRingBuffer#setReaderPaused});
     * while the reader is busy, writers send no byte. False if the ring is corrupt: nothing
     * after a corrupt record can be found, so the connection ends there (counted once), as
     * Perfetto's service ends it: the client sees its socket close and stops.
     */
    private boolean drain(RecordSlot slot) {
        boolean paused = false;
        for (;;) {
            SharedRingBuffer.ReadResult result = ring.beginRead(slot);
            if (result != SharedRingBuffer.ReadResult.OK) {
                if (result != SharedRingBuffer.ReadResult.CORRUPT && !paused) {
                    ring.setReaderPaused();
                    paused = true;
                    continue;
                }
                // The counters the client keeps in the ring, read while it is still mapped.
                ringStats = ring.stats();
                if (result == SharedRingBuffer.ReadResult.CORRUPT) {
                    malformed++;
                    ringCorrupt = true;
                    return false;
                }
                return true;
            }
            paused = false;
            try {
                read(slot.buffer(), slot.offset(), slot.length());
            } finally {
                ring.endRead(slot);
            }
        }
    }

    /** Reads, unwinds and books the record of {@code length} bytes at {@code offset}, or counts it malformed. */
    void read(MemorySegment buffer, long offset, long length) {
        try {
            switch (record.read(buffer, offset, length)) {
                case MALLOC -> bookMalloc(buffer, offset);
                case FREE -> bookFree();
                case HEAP_NAME -> nameHeap();
            }
            records++;
        } catch (WireFormatException e) {
            malformed++;
        }
    }

    /** Books the Malloc just read from {@code buffer} at {@code offset}, where its stack still is. */
    private void bookMalloc(MemorySegment buffer, long offset) throws WireFormatException {
        AllocMetadata alloc = record.alloc();
        if (Long.compareUnsigned(alloc.sampleSize(), MAX_SAMPLE_BYTES) > 0) {
            throw new WireFormatException("a sample of " + Long.toUnsignedString(alloc.sampleSize())
                    + " bytes is more than a process can allocate");
        }
        List<Frame> stack;
        if (alloc.arch() == AllocMetadata.ARCH_JAVA) {
            MemorySegment copied = record.copyStack(buffer, offset);
            stack = javaStacks.decode(copied, 0, copied.byteSize());
            if (stack == null) {
                malformed++;
                stack = UNKNOWN_STACK;
            }
        } else {
            stack = unwind(alloc, buffer, offset + WireRecord.STACK_OFFSET);
        }
        HeapBooks books = heap(alloc.heapId());
        if (books != null) {
            books.malloc(alloc.allocAddress(), alloc.sampleSize(), stack);
        }
    }

    /** Books the Free just read: the commonest record, most often of an address no sample holds. */
    private void bookFree() {
        HeapBooks books = heap(record.heapId());
        if (books != null) {
            books.free(record.freeAddress());
        }
    }

    private void nameHeap() {
        String name = record.heapName();
        if (!name.isEmpty() && (heapNames.size() < MAX_HEAPS || heapNames.containsKey(record.heapId()))) {
            heapNames.put(record.heapId(), name);
        }
    }

    /** Unwinds a Malloc whose stack bytes are at {@code stackOffset} of {@code buffer}, read in place: the walk reads a few words, each once. */
    private List<Frame> unwind(AllocMetadata alloc, MemorySegment buffer, long stackOffset) {
        List<Frame> stack = unwinder.unwind(alloc, buffer, stackOffset, record.stackSize());
        nativeStacks = unwinder.stacks();
        unwindingErrors = unwinder.errors();
        mapsReparses = unwinder.mapsReads() - 1;
        return stack;
    }

    /** The books of heap {@code heapId}; null, counted, past {@value #MAX_HEAPS} heaps. */
    private HeapBooks heap(int heapId) {
        if (lastBooks != null && heapId == lastHeapId) {
            return lastBooks;
        }
        HeapBooks books = heaps.get(heapId);
        if (books == null) {
            if (heaps.size() == MAX_HEAPS) {
                malformed++;
                return null;
            }
            books = new HeapBooks();
            heaps.put(heapId, books);
        }
        lastHeapId = heapId;
        lastBooks = books;
        return books;
    }

    /** The name the client gave heap {@code heapId}, or {@value #DEFAULT_HEAP_NAME}. */
    String heapName(int heapId) {
        return heapNames.getOrDefault(heapId, DEFAULT_HEAP_NAME);
    }

    /** Allocations the books of every heap dropped, or booked at the root, because a bound was reached. */
    long overflowed() {
        long total = 0;
        for (HeapBooks books : heaps.values()) {
            total += books.overflowed();
        }
        return total;
    }

    /** Times the unwinder read the maps again after the first. */
    long mapsReparses() {
        return mapsReparses;
    }

    /** The counters the client kept in its ring at the last read; null before the first. */
    SharedRingBuffer.Stats ringStats() {
        return ringStats;
    }

    /** Whether the ring held a record that was not one (its header or length broken). */
    boolean ringCorrupt() {
        return ringCorrupt;
    }

    /**
     * If the {@code received} bytes say the client is exiting: its maps read now, kept, and
     * the client told; once per client, however many times it says so.
     */
    private void noticeExit(byte[] controlBytes, int received) {
        for (int i = 0; i < received && !exitAnswered; i++) {
            if (controlBytes[i] == ControlBytes.EXITING) {
                exitAnswered = true;
                byte[] maps = readMapsFile();
                if (maps != null && maps.length > 0) {
                    mapsAtExit = maps;
                }
                socket.trySendByte(ControlBytes.EXIT_READ);
                return;
            }
        }
    }

    /** The client's maps: as it exited once it said so, else read again from the start. */
    private byte[] readMaps() {
        return mapsAtExit != null ? mapsAtExit : readMapsFile();
    }

    /** The client's maps file read from the start; null once it cannot be read (the process has exited). */
    private byte[] readMapsFile() {
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
