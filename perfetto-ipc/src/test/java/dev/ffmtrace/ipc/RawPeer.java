package dev.ffmtrace.ipc;

import dev.ffmtrace.memory.StreamAddress;
import dev.ffmtrace.memory.StreamSocket;
import perfetto.protos.WireProtocol.IPCFrame;

import java.util.Arrays;

/** A test peer that speaks the wire directly: sends any bytes, reads the host's frames as they are. */
final class RawPeer implements AutoCloseable {
    private final StreamSocket socket;
    private final FrameReader reader = new FrameReader();
    private final byte[] chunk = new byte[16 * 1024];

    RawPeer(StreamAddress address) {
        socket = StreamSocket.connect(address);
    }

    void send(byte[] bytes) {
        socket.send(bytes);
    }

    void send(byte[] bytes, int fd) {
        socket.send(bytes, fd);
    }

    /** Sends {@code bytes} one byte per send. */
    void sendByteByByte(byte[] bytes) {
        for (int i = 0; i < bytes.length; i++) {
            socket.send(Arrays.copyOfRange(bytes, i, i + 1));
        }
    }

    /** The next frame from the host, framed again as it came on the wire; null at end of stream. */
    byte[] nextFrameBytes() {
        while (!reader.next()) {
            StreamSocket.Received received = socket.receive(chunk, 1);
            if (received.bytes() == 0) {
                return null;
            }
            if (!reader.feed(chunk, received.bytes(), received.fds().length == 0 ? -1 : received.fds()[0])) {
                throw new AssertionError("the host sent a bad stream: " + reader.violation());
            }
        }
        StreamSocket.closeReceived(reader.fd());
        return Frames.withHeader(FrameReaderTest.payload(reader));
    }

    IPCFrame nextFrame() {
        byte[] bytes = nextFrameBytes();
        if (bytes == null) {
            return null;
        }
        try {
            return IPCFrame.parseFrom(Arrays.copyOfRange(bytes, FrameReader.HEADER_SIZE, bytes.length));
        } catch (com.google.protobuf.InvalidProtocolBufferException e) {
            throw new AssertionError(e);
        }
    }

    @Override
    public void close() {
        socket.close();
        reader.close();
    }
}
