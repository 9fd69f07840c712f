package dev.ffmtrace.tracing.buffer;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.MemorySegment;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;

/**
 * {@link FragmentScan}, the write path's pass over a chunk's heap copy: where the sound
 * fragments end and why it stopped, exactly as {@link FragmentIterator} (the read path's
 * tokenizer over a segment) finds them.
 */
class FragmentScanTest {
    private final FragmentScan scan = new FragmentScan();

    @Test
    void findsEveryFragmentAskedFor() {
        byte[] chunk = {2, 'a', 'b', 0, 3, 'c', 'd', 'e', 9};
        assertEquals(8, scan.scan(chunk, chunk.length, 3));
        assertEquals(FragmentScan.ALL, scan.stop());
        // Fewer asked for: the pass ends after them, and the rest is left alone.
        assertEquals(3, scan.scan(chunk, chunk.length, 1));
        assertEquals(FragmentScan.ALL, scan.stop());
    }

    @Test
    void theLastFragmentStartsAfterTheOthersOrWhereTheFragmentsStopParsing() {
        byte[] three = {2, 'a', 'b', 0, 3, 'c', 'd', 'e'};
        assertEquals(4, scan.lastFragmentStart(three, three.length));
        assertEquals(0, scan.lastFragmentStart(three, 3), "one fragment");
        assertEquals(0, scan.lastFragmentStart(three, 0), "none");
        byte[] broken = {1, 'a', 1, 'b', 7, 'c'};
        assertEquals(4, scan.lastFragmentStart(broken, broken.length), "the size running past the end");
    }

    @Test
    void aChunkThatEndsBeforeTheFragmentsAskedForIsShort() {
        byte[] chunk = {2, 'a', 'b'};
        assertEquals(3, scan.scan(chunk, chunk.length, 2));
        assertEquals(FragmentScan.SHORT, scan.stop());
    }

    @Test
    void aSizeRunningPastTheChunkOrNotParsingIsCorrupted() {
        byte[] pastTheEnd = {1, 'a', 5, 'b'};
        assertEquals(2, scan.scan(pastTheEnd, pastTheEnd.length, 2));
        assertEquals(FragmentScan.CORRUPTED, scan.stop());
        byte[] truncatedSize = {1, 'a', (byte) 0x80};
        assertEquals(2, scan.scan(truncatedSize, truncatedSize.length, 2));
        assertEquals(FragmentScan.CORRUPTED, scan.stop());
    }

    @Test
    void theDropPacketMarkerIsAWriterAbort() {
        // 0x0FFFFFFF in the four bytes a writer reserves for a size.
        byte[] chunk = {1, 'a', (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, 0x7F};
        assertEquals(2, scan.scan(chunk, chunk.length, 2));
        assertEquals(FragmentScan.WRITER_ABORT, scan.stop());
    }

    /** Any bytes, any count: the same end and the same reason as the tokenizer the reader uses. */
    @Property(tries = 2000)
    void agreesWithTheTokenizer(@ForAll byte[] bytes, @ForAll @IntRange(min = 0, max = 40) int fragments) {
        int end = scan.scan(bytes, bytes.length, fragments);

        FragmentIterator tokenizer = new FragmentIterator();
        tokenizer.reset(MemorySegment.ofArray(bytes), 0, bytes.length, 0, 0);
        int expectedEnd = 0;
        int expectedStop = FragmentScan.ALL;
        for (int i = 0; i < fragments; i++) {
            if (!tokenizer.next()) {
                expectedStop = tokenizer.writerAbort() ? FragmentScan.WRITER_ABORT
                        : tokenizer.corrupted() ? FragmentScan.CORRUPTED : FragmentScan.SHORT;
                break;
            }
            expectedEnd = tokenizer.nextOffset();
        }
        assertEquals(expectedEnd, end);
        assertEquals(expectedStop, scan.stop());
    }
}
