package dev.ffmtrace.heapprofd.client;

import dev.ffmtrace.heapprofd.wire.AllocMetadata;
import dev.ffmtrace.heapprofd.wire.ClientConfiguration;
import dev.ffmtrace.heapprofd.wire.WireFormatException;
import dev.ffmtrace.heapprofd.wire.WireRecords;
import dev.ffmtrace.memory.NativeException;
import dev.ffmtrace.memory.Os;
import dev.ffmtrace.memory.Seals;
import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.memory.StreamSocket;
import dev.ffmtrace.shmring.SharedRingBuffer;

import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.locks.LockSupport;

/**
 * A Java process's connection to heapprofd, with heaps of its own: the handshake as
 * heapprofd's client makes it, then sampled allocations and frees as records in the
 * SharedRingBuffer the service made, with a wake-up byte on the socket when its reader sleeps.
 *
 * <p>Handshake: connect to the service's socket and send one byte carrying the fds of
 * /proc/self/maps and /proc/self/mem; receive the {@value ClientConfiguration#SIZE}-byte
 * {@link ClientConfiguration}, in as many reads as it takes, with the ring's fd; attach the
 * ring, its seals checked.
 *
 * <p>Recording never throws into the application: once the service has gone (the wake-up
 * byte finds the socket closed, or the ring is shut down) or the ring stays full past the
 * configuration's patience, the client {@linkplain #isActive() stops} for good, and every
 * later call does nothing and returns false. Each heap has a sequence number its
 * allocations and frees share, and a {@link Sampler} per thread: a thread's allocations
 * draw down its own gap to the next sample, so the samples of all threads together are
 * still Poisson sampling of the heap's bytes at the heap's interval. A Malloc record
 * carries the Java stack of the allocation ({@link AllocMetadata#ARCH_JAVA} describes the
 * encoding). With adaptive sampling configured, a sampled allocation that finds less room
 * in the ring than the threshold doubles its heap's interval (up to the configured
 * maximum) and tells the service, as Perfetto's client does; each thread's sampler takes
 * the new interval after its next sample, its samples until then weighted with the
 * interval they were drawn at.
 *
 * <p>Thread-safe. An unsampled allocation takes no lock and writes nothing other threads
 * read: a thread-local lookup and its sampler's subtraction (Perfetto's client takes its
 * spinlock for the sampler on every allocation). Recording a sample, a free or a heap
 * takes the client's lock.
 */
public final class HeapprofdClient implements AutoCloseable {
    /** How long a blocking client waits between tries of a full ring, as Perfetto's does. */
    private static final long BLOCK_RETRY_NANOS = 100_000;
    /** A HeapName record's name when it only changes the interval. */
    private static final byte[] NO_NAME = new byte[0];

    private final StreamSocket socket;
    private final SharedRingBuffer ring;
    private final ClientConfiguration configuration;
    /** Copied on registration, so that reporting reads it without the lock. */
    private volatile Heap[] heaps = new Heap[0];
    private final AllocMetadata metadata = new AllocMetadata();
    private final JavaStackEncoder stacks = new JavaStackEncoder();
    private MemorySegment record = MemorySegment.ofArray(new byte[4096]);
    private volatile boolean active = true;

    private static final class Heap {
        /**
         * Null if the configuration does not profile the heap. A virtual thread is a thread
         * here too: each one that reports gets a sampler of its own (about 100 bytes, and a
         * logarithm for its first gap) on its first report, kept until it ends.
         */
        final ThreadLocal<Sampler> samplers;
        /** Under the client's lock; adaptive sampling doubles it, threads' samplers follow at their next sample. */
        volatile long samplingInterval;
        /** Under the client's lock. */
        long sequenceNumber;

        Heap(long samplingInterval) {
            this.samplingInterval = samplingInterval;
            this.samplers = samplingInterval == 0 ? null
                    : ThreadLocal.withInitial(() -> new Sampler(this.samplingInterval, ThreadLocalRandom.current().nextLong()));
        }
    }

    private HeapprofdClient(StreamSocket socket, SharedRingBuffer ring, ClientConfiguration configuration) {
        this.socket = socket;
        this.ring = ring;
        this.configuration = configuration;
    }

    /**
     * Connects to the service at {@code service} and makes the handshake.
     *
     * @throws HeapprofdException if the service cannot be reached, or what it sends is not
     *                            a configuration and a sealed ring
     */
    public static HeapprofdClient connect(UnixAddress service) throws HeapprofdException {
        StreamSocket socket;
        try {
            socket = StreamSocket.connect(service);
        } catch (NativeException e) {
            throw new HeapprofdException("cannot connect to heapprofd at " + service + ": " + e.getMessage());
        }
        try {
            sendProcFds(socket);
            byte[] bytes = new byte[ClientConfiguration.SIZE];
            int ringFd = receiveConfiguration(socket, bytes);
            ClientConfiguration configuration;
            SharedRingBuffer ring;
            try {
                configuration = ClientConfiguration.decode(MemorySegment.ofArray(bytes), 0);
                ring = SharedRingBuffer.attach(ringFd, Seals.REQUIRED);
            } finally {
                Os.closeFd(ringFd);
            }
            return new HeapprofdClient(socket, ring, configuration);
        } catch (WireFormatException | RuntimeException e) {
            socket.close();
            throw new HeapprofdException("heapprofd at " + service + ": " + e.getMessage());
        } catch (HeapprofdException e) {
            socket.close();
            throw e;
        }
    }

    private static void sendProcFds(StreamSocket socket) {
        int maps = Os.openReadOnly(Path.of("/proc/self/maps"));
        try {
            int mem = Os.openReadOnly(Path.of("/proc/self/mem"));
            try {
                socket.send(new byte[] {0}, maps, mem);
            } finally {
                Os.closeFd(mem);
            }
        } finally {
            Os.closeFd(maps);
        }
    }

    /** Reads the configuration's bytes, in as many reads as it takes; returns the ring fd that came with them. */
    private static int receiveConfiguration(StreamSocket socket, byte[] into) throws HeapprofdException {
        int ringFd = -1;
        int have = 0;
        byte[] chunk = new byte[into.length];
        while (have < into.length) {
            StreamSocket.Received received = socket.receive(chunk, 1);
            for (int fd : received.fds()) {
                if (ringFd < 0) {
                    ringFd = fd;
                } else {
                    Os.closeFd(fd);
                }
            }
            if (received.bytes() <= 0) {
                closeIfSet(ringFd);
                throw new HeapprofdException("the service closed the connection after " + have + " of "
                        + into.length + " configuration bytes");
            }
            int take = Math.min(received.bytes(), into.length - have);
            System.arraycopy(chunk, 0, into, have, take);
            have += take;
        }
        if (ringFd < 0) {
            throw new HeapprofdException("the configuration came without the ring's fd");
        }
        return ringFd;
    }

    private static void closeIfSet(int fd) {
        if (fd >= 0) {
            Os.closeFd(fd);
        }
    }

    /** What the service sent. */
    public ClientConfiguration configuration() {
        return configuration;
    }

    /** Whether the client still records; false for good once the service has gone or the client was closed. */
    public boolean isActive() {
        return active;
    }

    /**
     * Registers a heap and tells the service its name and sampling interval (a HeapName
     * record): the interval the configuration gives that name, 0 if it does not profile it.
     *
     * @return the heap's id, for {@link #reportAllocation} and {@link #reportFree}
     * @throws IllegalArgumentException if {@code name} does not fit a heap name
     */
    public synchronized int registerHeap(String name) {
        byte[] nameBytes = new ClientConfiguration.Heap(name, 0).name().getBytes(StandardCharsets.UTF_8);
        long interval = configuration.samplingInterval(name);
        Heap[] grown = Arrays.copyOf(heaps, heaps.length + 1);
        grown[heaps.length] = new Heap(interval);
        heaps = grown;
        int heapId = grown.length;
        if (active) {
            WireRecords.writeHeapName(record, 0, interval, heapId, nameBytes);
            send(WireRecords.HEAP_NAME_RECORD_SIZE);
        }
        return heapId;
    }

    /**
     * Reports an allocation of {@code size} bytes at {@code address} on heap {@code heapId};
     * the calling thread's sampler decides whether it is recorded.
     *
     * @return whether it was recorded
     */
    public boolean reportAllocation(int heapId, long address, long size) {
        Heap heap = heap(heapId);
        if (heap == null || heap.samplers == null) {
            return false;
        }
        Sampler sampler = heap.samplers.get();
        long sampleSize = sampler.sampleSize(size);
        if (sampleSize == 0) {
            return false;
        }
        boolean recorded = record(heap, heapId, address, size, sampleSize);
        long interval = heap.samplingInterval;
        if (sampler.samplingInterval() != interval) {
            sampler.setSamplingInterval(interval);
        }
        return recorded;
    }

    private synchronized boolean record(Heap heap, int heapId, long address, long size, long sampleSize) {
        if (!active || !adaptSampling(heap, heapId)) {
            return false;
        }
        metadata.sequenceNumber(++heap.sequenceNumber).allocSize(size).sampleSize(sampleSize).allocAddress(address)
                .stackPointer(0).timestampNanos(Os.clockNanos(Os.CLOCK_MONOTONIC)).heapId(heapId)
                .arch(AllocMetadata.ARCH_JAVA);
        int stackBytes = stacks.encode();
        long recordSize = WireRecords.mallocRecordSize(stackBytes);
        if (record.byteSize() < recordSize) {
            record = MemorySegment.ofArray(new byte[(int) Math.max(recordSize, 2 * record.byteSize())]);
        }
        WireRecords.writeMalloc(record, 0, metadata, MemorySegment.ofArray(stacks.bytes()), 0, stackBytes);
        return send((int) recordSize);
    }

    /**
     * Adaptive sampling: when the ring has less room than the threshold, doubles the heap's
     * interval, unless it reached the maximum, and sends the new interval in a HeapName
     * record with no name. Returns false if that record could not be sent.
     */
    private boolean adaptSampling(Heap heap, int heapId) {
        long threshold = configuration.adaptiveSamplingShmemThreshold();
        if (threshold == 0 || ring.writeAvailable() >= threshold) {
            return true;
        }
        long max = configuration.adaptiveSamplingMaxSamplingIntervalBytes();
        long interval = heap.samplingInterval;
        if (max != 0 && interval >= max) {
            return true;
        }
        heap.samplingInterval = 2 * interval;
        WireRecords.writeHeapName(record, 0, 2 * interval, heapId, NO_NAME);
        return send(WireRecords.HEAP_NAME_RECORD_SIZE);
    }

    /** Reports that the allocation at {@code address} on heap {@code heapId} was freed. */
    public synchronized void reportFree(int heapId, long address) {
        Heap heap = heap(heapId);
        if (!active || heap == null || heap.samplers == null) {
            return;
        }
        WireRecords.writeFree(record, 0, ++heap.sequenceNumber, address, heapId);
        send(WireRecords.FREE_RECORD_SIZE);
    }

    private Heap heap(int heapId) {
        Heap[] registered = heaps;
        return heapId >= 1 && heapId <= registered.length ? registered[heapId - 1] : null;
    }

    /**
     * Writes the record staged in {@link #record} and wakes the service if its reader
     * paused; false (and inactive) if that failed for good.
     */
    private boolean send(int length) {
        long deadline = System.nanoTime() + configuration.blockClientTimeoutUs() * 1000;
        for (;;) {
            if (ring.isShuttingDown()) {
                return stop();
            }
            SharedRingBuffer.WriteResult result = ring.tryWrite(record, 0, length);
            if (result == SharedRingBuffer.WriteResult.OK) {
                break;
            }
            boolean retry = configuration.blockClient()
                    && (result == SharedRingBuffer.WriteResult.NO_SPACE || result == SharedRingBuffer.WriteResult.LOCK_FAILED)
                    && (configuration.blockClientTimeoutUs() == 0 || System.nanoTime() < deadline);
            // Waiting is for a service that is there (one that hung up never frees the room): the
            // byte finds out, as Perfetto's client peeks at its socket, and nudges a reader that is.
            if (!retry || socket.trySendByte((byte) 1) == StreamSocket.SendResult.PEER_CLOSED) {
                // Perfetto's client gives up on the session when a write fails and it may not wait.
                return stop();
            }
            LockSupport.parkNanos(BLOCK_RETRY_NANOS);
        }
        // A reader that is still reading sees the record without a byte (Perfetto's scheme);
        // unlike Perfetto's client, a free wakes a paused reader too: an arena's frees come
        // when it closes, often the last records for a while, and a dump should see them.
        if (ring.getAndResetReaderPaused() && socket.trySendByte((byte) 1) == StreamSocket.SendResult.PEER_CLOSED) {
            return stop();
        }
        return true;
    }

    private boolean stop() {
        active = false;
        return false;
    }

    /** Stops recording and lets go of the ring and the socket; the service sees the socket close. */
    @Override
    public synchronized void close() {
        active = false;
        ring.close();
        socket.close();
    }
}
