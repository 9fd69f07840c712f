package dev.ffmtrace.heapprofd.service;

import dev.ffmtrace.heapprofd.wire.AllocMetadata;
import dev.ffmtrace.heapprofd.wire.ClientConfiguration;
import dev.ffmtrace.heapprofd.wire.WireFormatException;
import dev.ffmtrace.heapprofd.wire.WireRecords;
import dev.ffmtrace.memory.Os;
import dev.ffmtrace.memory.Seals;
import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.memory.StreamSocket;
import dev.ffmtrace.protozero.ProtoWire;
import dev.ffmtrace.shmring.SharedRingBuffer;

import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.locks.LockSupport;

/**
 * A heapprofd client made by hand, with none of HeapprofdClient's care: the real handshake
 * (one byte with this process's /proc/self/maps and mem fds, the configuration back with
 * the ring's fd), then whatever bytes the test writes into the ring as records.
 */
final class HandMadeClient implements AutoCloseable {
    final StreamSocket socket;
    final SharedRingBuffer ring;
    final ClientConfiguration configuration;

    private HandMadeClient(StreamSocket socket, SharedRingBuffer ring, ClientConfiguration configuration) {
        this.socket = socket;
        this.ring = ring;
        this.configuration = configuration;
    }

    static HandMadeClient connect(UnixAddress service) throws WireFormatException {
        return connect(service, Path.of("/proc/self/maps"));
    }

    /** As {@link #connect(UnixAddress)}, with {@code maps} sent as the process's maps. */
    static HandMadeClient connect(UnixAddress service, Path maps) throws WireFormatException {
        StreamSocket socket = StreamSocket.connect(service);
        int mapsFd = Os.openReadOnly(maps);
        int mem = Os.openReadOnly(Path.of("/proc/self/mem"));
        socket.send(new byte[] {0}, mapsFd, mem);
        Os.closeFd(mapsFd);
        Os.closeFd(mem);
        byte[] configuration = new byte[ClientConfiguration.SIZE];
        byte[] chunk = new byte[ClientConfiguration.SIZE];
        int ringFd = -1;
        for (int have = 0; have < configuration.length; ) {
            StreamSocket.Received received = socket.receive(chunk, 1);
            if (received.fds().length > 0) {
                ringFd = received.fds()[0];
            }
            if (received.bytes() <= 0) {
                throw new IllegalStateException("the service hung up after " + have + " configuration bytes");
            }
            System.arraycopy(chunk, 0, configuration, have, received.bytes());
            have += received.bytes();
        }
        SharedRingBuffer ring = SharedRingBuffer.attach(ringFd, Seals.REQUIRED);
        Os.closeFd(ringFd);
        return new HandMadeClient(socket, ring, ClientConfiguration.decode(MemorySegment.ofArray(configuration), 0));
    }

    /** Writes {@code length} bytes of {@code record} as one ring record, waiting for room, then the wake-up byte. */
    void write(byte[] record, int length) {
        MemorySegment bytes = MemorySegment.ofArray(record);
        SharedRingBuffer.WriteResult result;
        while ((result = ring.tryWrite(bytes, 0, length)) != SharedRingBuffer.WriteResult.OK) {
            if (result != SharedRingBuffer.WriteResult.NO_SPACE) {
                throw new IllegalStateException("the ring refused a record of " + length + " bytes: " + result);
            }
            LockSupport.parkNanos(100_000);
        }
        socket.send(new byte[] {1});
    }

    /**
     * A Malloc record of a one-frame Java stack, frame {@code frameId}, defined in this
     * record with {@code frameName} if not null.
     */
    static byte[] javaMalloc(long sequenceNumber, long address, long size, int heapId, int frameId, String frameName) {
        byte[] name = frameName == null ? new byte[0] : frameName.getBytes(StandardCharsets.UTF_8);
        byte[] payload = new byte[30 + name.length];
        int length = ProtoWire.writeVarInt(payload, 0, ((long) frameId << 1) | (frameName == null ? 0 : 1));
        if (frameName != null) {
            length = ProtoWire.writeVarInt(payload, length, name.length);
            System.arraycopy(name, 0, payload, length, name.length);
            length += name.length;
        }
        AllocMetadata metadata = new AllocMetadata().sequenceNumber(sequenceNumber).allocSize(size).sampleSize(size)
                .allocAddress(address).heapId(heapId).arch(AllocMetadata.ARCH_JAVA);
        byte[] record = new byte[(int) WireRecords.mallocRecordSize(length)];
        WireRecords.writeMalloc(MemorySegment.ofArray(record), 0, metadata, MemorySegment.ofArray(payload), 0, length);
        return record;
    }

    @Override
    public void close() {
        ring.close();
        socket.close();
    }
}
