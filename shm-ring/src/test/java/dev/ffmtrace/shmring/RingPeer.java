package dev.ffmtrace.shmring;

import dev.ffmtrace.memory.Seals;
import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.memory.StreamSocket;

/**
 * The second JVM of the cross-process tests: does what {@code native/src/ring_peer.c}
 * does for the write-all and read-all actions, through {@link SharedRingBuffer}.
 *
 * <pre>RingPeer &lt;socket&gt; attach|create:&lt;ring size&gt; write-all|read-all</pre>
 */
public final class RingPeer {
    private RingPeer() {
    }

    public static void main(String[] args) {
        UnixAddress address = args[0].startsWith("@")
                ? UnixAddress.abstractName(args[0].substring(1)) : new UnixAddress(args[0], false);
        try (StreamSocket socket = StreamSocket.connect(address);
             SharedRingBuffer buffer = open(socket, args[1])) {
            switch (args[2]) {
                case "write-all" -> {
                    RingRecords.writeAll(buffer);
                    System.out.println("wrote " + RingRecords.allCount(buffer));
                }
                case "read-all" -> {
                    RingRecords.readAll(buffer);
                    System.out.println("read " + RingRecords.allCount(buffer));
                }
                default -> throw new IllegalArgumentException("unknown action " + args[2]);
            }
        }
    }

    private static SharedRingBuffer open(StreamSocket socket, String role) {
        if (role.equals("attach")) {
            return SharedRingBuffer.attach(socket.receive(new byte[1], 1).fds()[0], Seals.REQUIRED);
        }
        SharedRingBuffer buffer = SharedRingBuffer.create(Long.parseLong(role.substring("create:".length())));
        socket.send(new byte[] {'S'}, buffer.fd());
        return buffer;
    }
}
