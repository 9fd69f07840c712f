package dev.ffmtrace.heapprofd.service;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.UnaryOperator;

/**
 * The books of one client process: a callsite tree (each node a frame under its caller),
 * per callsite the bytes and counts allocated and freed, and the live sampled allocations
 * by address so that a free finds its callsite. A free of an address with no live sampled
 * allocation is one of the many unsampled ones and changes nothing. A client cannot make
 * the books grow without bound: past {@value #MAX_CALLSITES} callsites new stacks are
 * booked at the root, past {@value #MAX_LIVE} live allocations new ones are dropped, and
 * both are counted. Thread-safe: the connection's thread books, a dump reads.
 */
final class HeapBooks {
    static final int MAX_CALLSITES = 1 << 20;
    static final int MAX_LIVE = 1 << 22;

    /** A callsite: a frame and its caller; the root has neither. */
    static final class Callsite {
        final Frame frame;
        final Callsite parent;
        final Map<Frame, Callsite> children = new LinkedHashMap<>();
        long allocatedBytes;
        long freedBytes;
        long allocations;
        long frees;

        Callsite(Frame frame, Callsite parent) {
            this.frame = frame;
            this.parent = parent;
        }

        /** The frames from the root's child down to this callsite, each as {@code naming} names it. */
        List<Frame> frames(UnaryOperator<Frame> naming) {
            List<Frame> frames = new ArrayList<>();
            for (Callsite at = this; at.parent != null; at = at.parent) {
                frames.add(naming.apply(at.frame));
            }
            return frames.reversed();
        }
    }

    private final Callsite root = new Callsite(null, null);
    private final LiveAllocations live = new LiveAllocations();
    private final int maxCallsites;
    private final int maxLive;
    private int callsites;
    private long overflowed;

    HeapBooks() {
        this(MAX_CALLSITES, MAX_LIVE);
    }

    /** Books bounded at {@code maxCallsites} callsites and {@code maxLive} live allocations. */
    HeapBooks(int maxCallsites, int maxLive) {
        this.maxCallsites = maxCallsites;
        this.maxLive = maxLive;
    }

    /** Books a sampled allocation of {@code sampleBytes} at {@code address}, made at {@code stack} (innermost first). */
    synchronized void malloc(long address, long sampleBytes, List<Frame> stack) {
        int slot = live.find(address);
        if (slot < 0 && live.size() >= maxLive) {
            overflowed++;
            return;
        }
        Callsite callsite = root;
        for (int i = stack.size() - 1; i >= 0; i--) {
            Frame frame = stack.get(i);
            Callsite child = callsite.children.get(frame);
            if (child == null) {
                if (callsites == maxCallsites) {
                    overflowed++;
                    callsite = root;
                    break;
                }
                child = new Callsite(frame, callsite);
                callsite.children.put(frame, child);
                callsites++;
            }
            callsite = child;
        }
        callsite.allocatedBytes = plus(callsite.allocatedBytes, sampleBytes);
        callsite.allocations++;
        if (slot >= 0) {
            // Reused without a free we saw: the old allocation is gone.
            free(live.callsite(slot), live.bytes(slot));
            live.replace(slot, callsite, sampleBytes);
        } else {
            live.add(slot, address, callsite, sampleBytes);
        }
    }

    /** Books a free of {@code address}. */
    synchronized void free(long address) {
        int slot = live.find(address);
        if (slot >= 0) {
            free(live.callsite(slot), live.bytes(slot));
            live.remove(slot);
        }
    }

    private static void free(Callsite callsite, long bytes) {
        callsite.freedBytes = plus(callsite.freedBytes, bytes);
        callsite.frees++;
    }

    /** The sum of two sizes, held at the largest long: a callsite's sum of samples cannot wrap. */
    private static long plus(long bytes, long more) {
        long sum = bytes + more;
        return sum < 0 ? Long.MAX_VALUE : sum;
    }

    /**
     * A callsite's totals at one moment.
     *
     * @param frames the callsite's stack, outermost first
     */
    record Sample(List<Frame> frames, long allocatedBytes, long freedBytes, long allocations, long frees) {
    }

    /**
     * The totals of every callsite with allocations, outermost callsites first, as one
     * consistent view; each frame as {@code naming} names it at this moment (a JIT's code,
     * named at the dump).
     */
    synchronized List<Sample> samples(UnaryOperator<Frame> naming) {
        List<Sample> samples = new ArrayList<>();
        List<Callsite> pending = new ArrayList<>(List.of(root));
        while (!pending.isEmpty()) {
            Callsite callsite = pending.removeLast();
            if (callsite.allocations > 0) {
                samples.add(new Sample(callsite.frames(naming), callsite.allocatedBytes, callsite.freedBytes,
                        callsite.allocations, callsite.frees));
            }
            pending.addAll(new ArrayList<>(callsite.children.values()).reversed());
        }
        return samples;
    }

    /** Allocations the books dropped, or booked at the root, because a bound was reached. */
    synchronized long overflowed() {
        return overflowed;
    }

    /**
     * Every callsite with allocations, as folded stacks: {@code root;...;leaf} and its
     * bytes, unreleased (allocated minus freed) or allocated; each frame as {@code naming}
     * names it. Callsites whose frames have the same names (calls from two places in one
     * function) are one stack, their bytes summed.
     */
    synchronized Map<String, Long> folded(boolean unreleased, UnaryOperator<Frame> naming) {
        Map<String, Long> out = new LinkedHashMap<>();
        List<String> path = new ArrayList<>();
        fold(root, path, unreleased, naming, out);
        return out;
    }

    private static void fold(Callsite callsite, List<String> path, boolean unreleased, UnaryOperator<Frame> naming,
                             Map<String, Long> out) {
        if (callsite.allocations > 0) {
            long bytes = unreleased ? callsite.allocatedBytes - callsite.freedBytes : callsite.allocatedBytes;
            out.merge(String.join(";", path), bytes, HeapBooks::plus);
        }
        for (Callsite child : callsite.children.values()) {
            path.add(naming.apply(child.frame).name());
            fold(child, path, unreleased, naming, out);
            path.removeLast();
        }
    }
}
