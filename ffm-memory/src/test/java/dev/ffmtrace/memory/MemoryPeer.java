package dev.ffmtrace.memory;

import dev.ffmtrace.memory.internal.Native;
import java.lang.foreign.MemorySegment;

/**
 * The JVM side of the cross-process tests, run in a second JVM: does what
 * {@code native/src/memfd_peer.c} does, through ffm-memory's own API.
 */
public final class MemoryPeer {
    private MemoryPeer() {
    }

    public static void main(String[] args) {
        String mode = args[0];
        UnixAddress address = args[1].startsWith("@")
                ? UnixAddress.abstractName(args[1].substring(1)) : new UnixAddress(args[1], false);
        long size = Long.parseLong(args[2]);
        int seed = Integer.parseInt(args[3]);
        try (StreamSocket socket = StreamSocket.connect(address)) {
            switch (mode) {
                case "receive" -> {
                    StreamSocket.Received received = socket.receive(new byte[1], 1);
                    try (SharedMemory memory = SharedMemory.attach(received.fds()[0], size, Seals.REQUIRED)) {
                        fill(memory.segment(), seed);
                        try {
                            Native.ftruncate(memory.fd(), size / 2);
                            System.out.println("shrink: ok");
                        } catch (NativeException e) {
                            System.out.println("shrink: " + e.errnoName());
                        }
                    }
                    socket.send(new byte[] {'W'});
                }
                case "send" -> {
                    try (SharedMemory memory = SharedMemory.create("memory-peer", size)) {
                        fill(memory.segment(), seed);
                        socket.send(new byte[] {'S'}, memory.fd());
                        socket.receive(new byte[1], 0);
                    }
                }
                default -> throw new IllegalArgumentException("unknown mode " + mode);
            }
        }
    }

    static void fill(MemorySegment segment, int seed) {
        for (long i = 0; i < segment.byteSize(); i++) {
            segment.set(Layouts.BYTE, i, pattern(i, seed));
        }
    }

    static byte pattern(long i, int seed) {
        return (byte) ((i * 31 + seed) & 0xff);
    }
}
