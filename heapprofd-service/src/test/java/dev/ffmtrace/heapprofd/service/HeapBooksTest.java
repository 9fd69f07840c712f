package dev.ffmtrace.heapprofd.service;

import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;
import org.junit.jupiter.api.Test;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.UnaryOperator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

/** One heap's books: callsite totals, live allocations by address, their bounds, and dumps while booking. */
class HeapBooksTest {
    private static final Frame MAIN = Frame.unknown("main");
    private static final Frame A = Frame.unknown("a");
    private static final Frame B = Frame.unknown("b");
    private static final List<Frame> MAIN_A = List.of(A, MAIN);
    private static final List<Frame> MAIN_B = List.of(B, MAIN);

    /** The totals of the callsite at {@code frames} (outermost first), or null. */
    private static HeapBooks.Sample sample(HeapBooks books, Frame... frames) {
        for (HeapBooks.Sample sample : books.samples(UnaryOperator.identity())) {
            if (sample.frames().equals(List.of(frames))) {
                return sample;
            }
        }
        return null;
    }

    @Test
    void aFreeBooksItsAllocationsBytesAtItsCallsiteAndAnUnsampledFreeNothing() {
        HeapBooks books = new HeapBooks();
        books.malloc(0x1000, 100, MAIN_A);
        books.malloc(0x2000, 50, MAIN_A);
        books.free(0x1000);
        books.free(0x3000);
        books.free(0x1000);
        assertEquals(new HeapBooks.Sample(List.of(MAIN, A), 150, 100, 2, 1), sample(books, MAIN, A));
        assertEquals(Map.of("main;a", 50L), books.folded(true, UnaryOperator.identity()));
        assertEquals(Map.of("main;a", 150L), books.folded(false, UnaryOperator.identity()));
        assertEquals(0, books.overflowed());
    }

    @Test
    void callsitesWhoseFramesHaveTheSameNamesFoldIntoOneStackTheirBytesSummedAsTheNamingNamesThem() {
        HeapBooks books = new HeapBooks();
        // Two calls from one function: two callsites, one name.
        Frame firstCall = new Frame("a", Frame.Module.UNKNOWN, 0x10);
        Frame secondCall = new Frame("a", Frame.Module.UNKNOWN, 0x20);
        books.malloc(0x1000, 100, List.of(firstCall, MAIN));
        books.malloc(0x2000, 30, List.of(secondCall, MAIN));
        assertEquals(Map.of("main;a", 130L), books.folded(false, UnaryOperator.identity()));
        UnaryOperator<Frame> renamed = frame -> frame.relPc() == 0x20 ? Frame.unknown("b") : frame;
        assertEquals(Map.of("main;a", 100L, "main;b", 30L), books.folded(false, renamed));
        assertEquals(List.of(MAIN, Frame.unknown("b")), books.samples(renamed).getLast().frames());
    }

    @Test
    void aCallsitesSumsAreHeldAtTheLargestLongRatherThanWrap() {
        HeapBooks books = new HeapBooks();
        long huge = ClientConnection.MAX_SAMPLE_BYTES;
        for (int i = 0; i < 200; i++) {
            books.malloc(0x1000 + 16L * i, huge, MAIN_A);
        }
        for (int i = 0; i < 200; i++) {
            books.free(0x1000 + 16L * i);
        }
        assertEquals(new HeapBooks.Sample(List.of(MAIN, A), Long.MAX_VALUE, Long.MAX_VALUE, 200, 200),
                sample(books, MAIN, A));
        assertEquals(Map.of("main;a", 0L), books.folded(true, UnaryOperator.identity()));
    }

    @Test
    void anAddressAllocatedAgainWithoutAFreeFreesItsOldAllocation() {
        HeapBooks books = new HeapBooks();
        books.malloc(0x1000, 100, MAIN_A);
        books.malloc(0x1000, 30, MAIN_B);
        assertEquals(new HeapBooks.Sample(List.of(MAIN, A), 100, 100, 1, 1), sample(books, MAIN, A));
        assertEquals(new HeapBooks.Sample(List.of(MAIN, B), 30, 0, 1, 0), sample(books, MAIN, B));
        books.free(0x1000);
        assertEquals(new HeapBooks.Sample(List.of(MAIN, B), 30, 30, 1, 1), sample(books, MAIN, B));
    }

    @Test
    void pastTheLiveBoundNewAddressesAreDroppedAndCountedButLiveOnesStillBook() {
        HeapBooks books = new HeapBooks(HeapBooks.MAX_CALLSITES, 2);
        books.malloc(0x1000, 10, MAIN_A);
        books.malloc(0x2000, 10, MAIN_A);
        books.malloc(0x3000, 10, MAIN_A);
        assertEquals(1, books.overflowed());
        books.malloc(0x2000, 10, MAIN_A);
        assertEquals(1, books.overflowed(), "an address already live is no new entry");
        books.free(0x3000);
        assertEquals(new HeapBooks.Sample(List.of(MAIN, A), 30, 10, 3, 1), sample(books, MAIN, A));
        books.free(0x1000);
        books.malloc(0x3000, 10, MAIN_A);
        assertEquals(1, books.overflowed());
        assertEquals(new HeapBooks.Sample(List.of(MAIN, A), 40, 20, 4, 2), sample(books, MAIN, A));
    }

    @Test
    void pastTheCallsiteBoundANewStackIsBookedAtTheRootAndCounted() {
        HeapBooks books = new HeapBooks(2, HeapBooks.MAX_LIVE);
        books.malloc(0x1000, 10, MAIN_A);
        books.malloc(0x2000, 20, MAIN_B);
        assertEquals(1, books.overflowed());
        assertNull(sample(books, MAIN, B));
        assertEquals(new HeapBooks.Sample(List.of(), 20, 0, 1, 0), sample(books));
        books.free(0x2000);
        assertEquals(new HeapBooks.Sample(List.of(), 20, 20, 1, 1), sample(books));
        books.malloc(0x3000, 10, MAIN_A);
        assertEquals(new HeapBooks.Sample(List.of(MAIN, A), 20, 0, 2, 0), sample(books, MAIN, A));
    }

    @Test
    void theBooksKeepNoReferenceToAStackBuffer() {
        HeapBooks books = new HeapBooks();
        FrameBuffer stack = new FrameBuffer(4);
        stack.add(A);
        stack.add(MAIN);
        books.malloc(0x1000, 10, stack);
        stack.clear();
        stack.add(B);
        stack.add(MAIN);
        books.malloc(0x2000, 20, stack);
        assertEquals(new HeapBooks.Sample(List.of(MAIN, A), 10, 0, 1, 0), sample(books, MAIN, A));
        assertEquals(new HeapBooks.Sample(List.of(MAIN, B), 20, 0, 1, 0), sample(books, MAIN, B));
    }

    @Test
    void aDumpWhileTheConnectionBooksSeesConsistentTotals() throws Exception {
        HeapBooks books = new HeapBooks();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread dumper = Thread.ofPlatform().start(() -> {
            try {
                for (int i = 0; i < 200; i++) {
                    for (HeapBooks.Sample sample : books.samples(UnaryOperator.identity())) {
                        // Each Malloc is freed before the next: at most one is live in a view.
                        if (sample.allocations() - sample.frees() > 1 || sample.allocations() - sample.frees() < 0) {
                            throw new AssertionError(sample.toString());
                        }
                    }
                }
            } catch (Throwable e) {
                failure.set(e);
            }
        });
        for (long i = 0; i < 200_000; i++) {
            books.malloc(i << 4, 8, i % 2 == 0 ? MAIN_A : MAIN_B);
            books.free(i << 4);
        }
        dumper.join();
        assertNull(failure.get());
        assertEquals(new HeapBooks.Sample(List.of(MAIN, A), 800_000, 800_000, 100_000, 100_000),
                sample(books, MAIN, A));
    }

    private record Live(int stack, long bytes) {
    }

    /**
     * Mallocs and frees of a few addresses and stacks, with small bounds, book what a model
     * of the live allocations by address and the totals by stack books.
     */
    @Property(tries = 500)
    void booksAsAModelOfLiveAllocationsAndTotals(
            @ForAll @Size(max = 400) List<@IntRange(min = 0, max = 1023) Integer> steps) {
        int maxLive = 6;
        List<List<Frame>> stacks = List.of(MAIN_A, MAIN_B, List.of(MAIN), List.of(B, A, MAIN));
        HeapBooks books = new HeapBooks(HeapBooks.MAX_CALLSITES, maxLive);
        Map<Long, Live> live = new HashMap<>();
        long[][] totals = new long[stacks.size()][4];
        long overflowed = 0;
        for (int step : steps) {
            long address = (step % 16) * 32L;
            Live freed;
            if (step / 16 % 2 == 0) {
                int stack = step / 32 % stacks.size();
                books.malloc(address, step, stacks.get(stack));
                if (!live.containsKey(address) && live.size() >= maxLive) {
                    overflowed++;
                    continue;
                }
                totals[stack][0] += step;
                totals[stack][2]++;
                freed = live.put(address, new Live(stack, step));
            } else {
                books.free(address);
                freed = live.remove(address);
            }
            if (freed != null) {
                totals[freed.stack()][1] += freed.bytes();
                totals[freed.stack()][3]++;
            }
        }
        assertEquals(overflowed, books.overflowed());
        for (int stack = 0; stack < stacks.size(); stack++) {
            HeapBooks.Sample sample = sample(books, stacks.get(stack).reversed().toArray(Frame[]::new));
            long[] expected = totals[stack];
            if (expected[2] == 0) {
                assertNull(sample);
            } else {
                assertEquals(new HeapBooks.Sample(stacks.get(stack).reversed(), expected[0], expected[1], expected[2],
                        expected[3]), sample);
            }
        }
    }
}
