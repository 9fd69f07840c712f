package dev.ffmtrace.tracing.service;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.WritableByteChannel;
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
}
