package dev.ffmtrace.tracing.buffer;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * One script per row of the divergence table in this package's documentation: a case
 * where ffmtrace's buffer deliberately prints something other than Perfetto's C++. Each
 * script's comment says what the C++ prints instead ({@code # C++:} lines) and why
 * ffmtrace does not; its {@code .out} file pins what ffmtrace prints.
 */
class TraceBufferDivergenceTest {
    @ParameterizedTest
    @ValueSource(strings = {
            "D01_read_gap_reported_once",
            "D02_gap_inside_one_walk",
            "D03_gap_before_unpatched_chunk",
            "D04_scraped_continuation_waits",
            "D05_gap_does_not_drop_later_packets",
            "D06_corrupt_fragment_flags_the_sequence",
            "D07_empty_fragmented_packet_dropped",
            "D08_truncated_chunk_does_not_continue",
            "D09_recommitted_chunk_read_once",
            "D10_evicted_newer_chunk_refuses_older",
            "D11_every_chunk_leaves_the_accounting",
            "D12_writer_abort_flags_the_next_packet",
            "D13_scraped_chunk_overwritten_before_commit",
            "D14_discarded_chunk_before_buffered_ones"})
    void printsWhatTheDivergenceTablePins(String name) {
        List<String> script = BufferScript.resource("divergence/" + name + ".txt");
        List<String> actual = BufferScript.run(script);
        List<String> expected = BufferScript.resource("divergence/" + name + ".out");
        assertEquals(String.join("\n", expected), String.join("\n", actual), name);
    }
}
