package dev.ffmtrace.bench;

import org.openjdk.jmh.annotations.AuxCounters;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/** Bytes a benchmark moved, which JMH reports in a {@code bytes} column as bytes per second. */
@State(Scope.Thread)
@AuxCounters(AuxCounters.Type.OPERATIONS)
public class BytesThroughput {
    public long bytes;

    @Setup(Level.Iteration)
    public void clear() {
        bytes = 0;
    }
}
