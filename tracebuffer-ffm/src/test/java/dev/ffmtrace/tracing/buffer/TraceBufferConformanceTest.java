package dev.ffmtrace.tracing.buffer;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Operation scripts whose output was recorded from Perfetto's C++ TraceBufferV2
 * (google/perfetto ec5d16b14b): ffmtrace's buffer must print exactly the same.
 */
class TraceBufferConformanceTest {
    @ParameterizedTest
    @ValueSource(strings = {
            "R01_relocation_out_of_order",
            "R02_first_lap_tail",
            "R03_erase_walk_lookahead",
            "R08_relocation_not_first_chunk"})
    void printsWhatTheCxxBufferPrints(String name) {
        List<String> expected = BufferScript.resource("conformance/" + name + ".out");
        List<String> actual = BufferScript.run(BufferScript.resource("conformance/" + name + ".txt"));
        assertEquals(String.join("\n", expected), String.join("\n", actual), name);
    }
}
