package dev.ffmtrace.tracing.service;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.ffmtrace.tracing.buffer.TracePacketView;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.WritableByteChannel;
import java.util.HexFormat;
import org.junit.jupiter.api.Test;

class TraceSinkTest {
    /** Fails its first write, then would take everything: it counts the writes that reach it. */
    private static final class FailingOnce implements WritableByteChannel {
        int writes;

        @Override
        public int write(ByteBuffer source) throws IOException {
            if (writes++ == 0) {
                throw new IOException("took no bytes");
            }
            int length = source.remaining();
            source.position(source.limit());
            return length;
        }

        @Override
        public boolean isOpen() {
            return true;
        }

        @Override
        public void close() {
        }
    }

    @Test
    void aFailedWriteFailsEveryLaterOneWithoutTouchingTheOutput() {
        FailingOnce output = new FailingOnce();
        TraceSink sink = new TraceSink(output, Long.MAX_VALUE, new TraceSink.Staging());
        sink.appendFramed(new byte[10], 0, 10);
        IOException first = assertThrows(IOException.class, sink::flush);
        sink.appendFramed(new byte[10], 0, 10);
        IOException later = assertThrows(IOException.class, sink::flush);
        assertSame(first, later.getCause());
        assertEquals(1, output.writes, "the broken output is not written again");
    }

    @Test
    void anInvalidPacketTakesNoRoomAndAShorterOneTheShortestLength() throws IOException {
        ByteArrayOutputStream output = new ByteArrayOutputStream();
        TraceSink sink = new TraceSink(Channels.newChannel(output), Long.MAX_VALUE, new TraceSink.Staging());
        assertEquals(ReadbackSink.Appended.INVALID, sink.append(packet("4001" + "1800", 0)));
        assertEquals(0, sink.pending());

        // 117 bytes, then the trusted fields and a loss of 3: 127 bytes, one length byte;
        // with the producer's SMB_FULL it could have been 128, two length bytes.
        String payload = "5a73" + "00".repeat(115);
        ProducerPacket shorter = packet(payload, 3);
        assertEquals(128, shorter.maxSize());
        assertEquals(ReadbackSink.Appended.TAKEN, sink.append(shorter));
        sink.flush();
        assertEquals("0a7f" + payload + "1800" + "5005" + "f80400" + "d00203", HexFormat.of().formatHex(output.toByteArray()));
    }

    /** The packet {@code hex} of sequence 5, with service loss {@code loss}. */
    private static ProducerPacket packet(String hex, int loss) {
        byte[] bytes = HexFormat.of().parseHex(hex);
        return ProducerPackets.of(TracePacketView.ofFragments(MemorySegment.ofArray(bytes), new long[] {0},
                new int[] {bytes.length}), 5, loss);
    }
}
