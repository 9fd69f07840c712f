package dev.ffmtrace.cli.stress;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.perfetto.protos.Trace;
import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.protozero.HeapBuffered;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.function.LongPredicate;
import org.junit.jupiter.api.Test;

/** The verifier's verdicts on traces made with the writers' own generator. */
class StressVerifierTest {
    private static final StressPacket.Mix ALL_SIZES = new StressPacket.Mix(1, 1, 1);

    /** A trace of writer 3/1's packets 0..count-1 that {@code keep} keeps, flagging those in {@code flag}. */
    private static byte[] trace(int count, LongPredicate keep, LongPredicate flag, boolean last) {
        HeapBuffered<Trace> trace = new HeapBuffered<>(Trace.FACTORY);
        StressPacket.Generator generator = new StressPacket.Generator(3, 1, ALL_SIZES, 42);
        for (long i = 0; i < count; i++) {
            // Every packet is generated, kept or not, as the writer's random stream goes on.
            HeapBuffered<TracePacket> packet = new HeapBuffered<>(TracePacket.FACTORY);
            generator.write(packet.get(), i, 1000 + i, last && i == count - 1);
            packet.get().setTrustedPacketSequenceId(7);
            if (flag.test(i)) {
                packet.get().setPreviousPacketDropped(1);
            }
            if (keep.test(i)) {
                trace.get().appendBytes(Trace.PACKET_FIELD_NUMBER, packet.toByteArray());
            }
        }
        return trace.toByteArray();
    }

    private static StressVerifier.Account verify(byte[] trace, long attempted, boolean killed, int buffer,
                                                 long discarded) {
        HeapBuffered<Trace> stats = new HeapBuffered<>(Trace.FACTORY);
        var traceStats = stats.get().addPacket().setTraceStats();
        // Both buffers count the discards: only the DISCARD buffer's excuse its writers.
        traceStats.addBufferStats().setChunksDiscarded(discarded);
        traceStats.addBufferStats().setChunksDiscarded(discarded);
        byte[] all = concat(trace, stats.toByteArray());
        StressVerifier.Result result = StressVerifier.verify(MemorySegment.ofArray(all),
                List.of(new StressVerifier.Writer(3, 1, buffer, attempted, killed)));
        assertEquals(0, result.strangers(), result.strangerExamples().toString());
        return result.accounts().getFirst();
    }

    private static byte[] concat(byte[] a, byte[] b) {
        byte[] all = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, all, a.length, b.length);
        return all;
    }

    @Test
    void everyPacketReadInOrderIsAccounted() {
        StressVerifier.Account account = verify(trace(50, i -> true, i -> false, true), 50, false, 0, 0);
        assertTrue(account.ok(), account.examples().toString());
        assertEquals(50, account.read());
        assertEquals(0, account.lost());
        assertTrue(account.sawLast());
    }

    @Test
    void aGapIsLostWhenTheNextPacketSaysSoAndUnaccountedOtherwise() {
        StressVerifier.Account flagged = verify(trace(50, i -> i < 10 || i >= 15, i -> i == 15, true), 50, false, 0, 0);
        assertTrue(flagged.ok(), flagged.examples().toString());
        assertEquals(45, flagged.read());
        assertEquals(5, flagged.lostFlagged());

        StressVerifier.Account silent = verify(trace(50, i -> i < 10 || i >= 15, i -> false, true), 50, false, 0, 0);
        assertFalse(silent.ok());
        assertEquals(5, silent.unaccounted());
    }

    @Test
    void aMissingTailIsAccountedOnlyForAKilledWriterOrADiscardingBuffer() {
        byte[] headOnly = trace(50, i -> i < 30, i -> false, false);
        assertEquals(StressVerifier.MAX_LOST_AT_KILL,
                verify(headOnly, 30 + StressVerifier.MAX_LOST_AT_KILL, true, 0, 0).lostAtKill());
        // A kill takes the packet being written and perhaps the one before, not 20.
        assertEquals(20, verify(headOnly, 50, true, 0, 0).unaccounted());
        assertEquals(20, verify(headOnly, 50, false, 1, 3).lostDiscarded());
        assertEquals(20, verify(headOnly, 50, true, 1, 3).lostDiscarded());
        StressVerifier.Account live = verify(headOnly, 50, false, 0, 0);
        assertFalse(live.ok());
        assertEquals(20, live.unaccounted());
        // A ring buffer's writer is not excused by discards (a hostile producer's chunks can be refused there).
        assertEquals(20, verify(headOnly, 50, false, 0, 3).unaccounted());
    }

    @Test
    void aCorruptedPayloadIsCaughtByItsChecksum() {
        byte[] trace = trace(20, i -> true, i -> false, true);
        // The last packet ends with its payload's last string (at least 8 bytes), then
        // seq_value (at most 6 bytes) and trusted_packet_sequence_id (2): flip a string byte.
        int at = trace.length - 9;
        trace[at] ^= 0x01;
        StressVerifier.Account account = verify(trace, 20, false, 0, 0);
        assertEquals(1, account.corrupt());
        assertFalse(account.ok());
    }

    @Test
    void aRepeatedPacketIsOutOfOrder() {
        byte[] once = trace(10, i -> true, i -> false, false);
        StressVerifier.Account account = verify(concat(once, once), 10, false, 0, 0);
        assertEquals(10, account.outOfOrder());
        assertEquals(10, account.read());
        assertFalse(account.ok());
    }

    @Test
    void moreReadThanAttemptedIsUnaccountedExceptTheOnePacketAKilledWriterDidNotCount() {
        byte[] trace = trace(10, i -> true, i -> false, false);
        assertTrue(verify(trace, 9, true, 0, 0).ok());
        assertEquals(1, verify(trace, 9, false, 0, 0).unaccounted());
        assertEquals(2, verify(trace, 8, true, 0, 0).unaccounted());
    }
}
