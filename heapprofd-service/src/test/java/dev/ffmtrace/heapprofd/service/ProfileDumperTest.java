package dev.ffmtrace.heapprofd.service;

import dev.ffmtrace.tracing.trackevent.TraceFileWriter;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.function.UnaryOperator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The dumper alone, with books of known callsites, through a session's writer. */
class ProfileDumperTest {
    private static final Frame.Module PROGRAM = new Frame.Module("/bin/program", "0123456789abcdef", 0x1000, 0x2000,
            0, 0);

    /** Books with {@code callsites} callsites main;fN, each with N+1 allocations of 10 bytes and one free. */
    private static HeapBooks books(int callsites) {
        HeapBooks books = new HeapBooks();
        long address = 1;
        for (int i = 0; i < callsites; i++) {
            List<Frame> stack = List.of(new Frame("f" + i, PROGRAM, 0x100 + i), new Frame("main", PROGRAM, 0x10));
            for (int j = 0; j <= i; j++) {
                books.malloc(address++, 10, stack);
            }
            books.free(address - 1);
        }
        return books;
    }

    private static ProfileDumper.Heap heap(HeapBooks books) {
        return new ProfileDumper.Heap(42, "program", "libc.malloc", 1, books.samples(UnaryOperator.identity()),
                new ProfileDumper.Stats(0, 0, 0, 0, false, false, false));
    }

    /** Writes two dumps of {@code books} with {@code dumper} into a trace file; the trace. */
    private static byte[] dumpTwice(ProfileDumper dumper, HeapBooks books) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (TraceFileWriter sink = new TraceFileWriter(out, 2)) {
            dumper.dump(sink, List.of(heap(books)), 1, 1);
            dumper.dump(sink, List.of(heap(books)), 2, 2);
        }
        return out.toByteArray();
    }

    private static List<String> expected(int callsites) {
        List<String> lines = new ArrayList<>();
        for (int i = 0; i < callsites; i++) {
            lines.add("main;f" + i + " " + 10 * i);
        }
        return lines;
    }

    @Test
    void manyCallsitesSplitOverPacketsUnderTheBudgetAndReassemble() throws Exception {
        HeapBooks books = books(2000);
        ProfileTrace trace = ProfileTrace.parse(dumpTwice(new ProfileDumper(4096, 1 << 20), books));
        assertEquals(2, trace.dumps.size());
        assertEquals(0, trace.indexGaps);
        assertEquals(0, trace.redefinitions);
        assertTrue(trace.dumps.getFirst().packets() > 10, "packets: " + trace.dumps.getFirst().packets());
        assertEquals(List.of(2000, 0), trace.callstacksDefined);
        for (ProfileTrace.Dump dump : trace.dumps) {
            assertEquals(expected(2000), ProfileTrace.folded(dump, true));
            ProfileTrace.Sample last = dump.samples().getLast();
            assertEquals(List.of(20_000L, 10L, 2000L, 1L),
                    List.of(last.allocated(), last.freed(), last.allocations(), last.frees()));
        }
    }

    @Test
    void aDumperPastItsBoundOfInternedEntriesStartsThemAgain() throws Exception {
        HeapBooks books = books(10);
        // 10 callstacks, 11 frames, 11 names, 1 build id, 2 path parts, 1 mapping: past 30.
        ProfileTrace trace = ProfileTrace.parse(dumpTwice(new ProfileDumper(1 << 15, 30), books));
        assertEquals(List.of(10, 10), trace.callstacksDefined, "the second dump defines everything again");
        assertEquals(0, trace.redefinitions, "after the sequence's state was cleared");
        assertEquals(expected(10), ProfileTrace.folded(trace.dumps.getLast(), true));
        ProfileTrace kept = ProfileTrace.parse(dumpTwice(new ProfileDumper(1 << 15, 1 << 20), books));
        assertEquals(List.of(10, 0), kept.callstacksDefined);
    }
}
