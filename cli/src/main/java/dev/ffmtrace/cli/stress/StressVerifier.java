package dev.ffmtrace.cli.stress;

import dev.ffmtrace.perfetto.protos.TestEvent;
import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.perfetto.protos.TraceStats;
import dev.ffmtrace.protozero.ProtoDecoder;
import dev.ffmtrace.protozero.ProtoField;
import dev.ffmtrace.protozero.RepeatedFieldIterator;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Reads a stress run's trace and accounts for every packet of every writer: read intact
 * exactly once and in order, or lost where the trace says so. A gap in a writer's
 * counters is accounted when the packet after it carries {@code previous_packet_dropped}
 * (the service or the writer saw the loss); packets missing after the last one read are
 * accounted when the writer's process was killed and they are at most
 * {@value #MAX_LOST_AT_KILL}, or when it writes into the DISCARD
 * buffer ({@link StressRun#DISCARD_BUFFER}), whose stats count discarded chunks (once
 * full, it refuses every later chunk). Anything else is unaccounted; a packet whose checksum or
 * encoding is wrong is corrupt; one at or below a counter already read is a duplicate or
 * out of order. The trace's last {@code trace_stats} gives the buffers' counters.
 */
public final class StressVerifier {
    private static final int TRACE_PACKET_FIELD = 1;
    private static final int EXAMPLES = 5;
    /**
     * The most packets a SIGKILL may take from a writer's tail: the one it was writing, and
     * the one before, if it died between finishing it and sending the patches of its nested
     * sizes, or if that packet's last fragment is the last of the chunk being written (a
     * scrape keeps back a chunk's last fragment, which may be unfinished). The service takes
     * every complete chunk of a producer that is gone, committed or not, and gives up the
     * patches it owes, so no other packet is held back.
     */
    static final int MAX_LOST_AT_KILL = 2;

    /** What one writer of the run was: its identity, its buffer, how many packets it attempted. */
    public record Writer(int producer, int writer, int buffer, long attempted, boolean killed) {
        public String name() {
            return StressPacket.writerName(producer, writer);
        }
    }

    /** One writer's account. */
    public static final class Account {
        final Writer writer;
        long read;
        long lostFlagged;
        long lostAtKill;
        long lostDiscarded;
        long unaccounted;
        long corrupt;
        long outOfOrder;
        long nextCounter;
        long sequenceId = -1;
        long crossedSequences;
        boolean sawLast;
        final List<String> examples = new ArrayList<>();

        Account(Writer writer) {
            this.writer = writer;
        }

        void example(String what) {
            if (examples.size() < EXAMPLES) {
                examples.add(what);
            }
        }

        public Writer writer() {
            return writer;
        }

        public long read() {
            return read;
        }

        public long lost() {
            return lostFlagged + lostAtKill + lostDiscarded;
        }

        public long lostFlagged() {
            return lostFlagged;
        }

        public long lostAtKill() {
            return lostAtKill;
        }

        public long lostDiscarded() {
            return lostDiscarded;
        }

        public long unaccounted() {
            return unaccounted;
        }

        public long corrupt() {
            return corrupt;
        }

        public long outOfOrder() {
            return outOfOrder;
        }

        public long crossedSequences() {
            return crossedSequences;
        }

        public boolean sawLast() {
            return sawLast;
        }

        public List<String> examples() {
            return examples;
        }

        /** Whether every packet is accounted for and none was wrong. */
        public boolean ok() {
            return unaccounted == 0 && corrupt == 0 && outOfOrder == 0 && crossedSequences == 0;
        }
    }

    /** The buffer counters of the trace's last {@code trace_stats}, by buffer index. */
    public record BufferCounters(long chunksWritten, long chunksOverwritten, long chunksDiscarded,
                                 long abiViolations, long patchesFailed, long traceWriterPacketLoss) {
    }

    /**
     * The verdict: each writer's account, the stress packets of no known writer (or whose
     * identity does not parse), the buffers' counters and the service's.
     */
    public record Result(List<Account> accounts, long strangers, List<String> strangerExamples,
                         List<BufferCounters> buffers, long invalidPackets, long serviceChunksDiscarded, long packets,
                         long hostilePackets) {
        public long read() {
            return accounts.stream().mapToLong(Account::read).sum();
        }

        public long lost() {
            return accounts.stream().mapToLong(Account::lost).sum();
        }

        public long unaccounted() {
            return accounts.stream().mapToLong(Account::unaccounted).sum();
        }

        public long attempted() {
            return accounts.stream().mapToLong(account -> account.writer.attempted()).sum();
        }

        public boolean ok() {
            return strangers == 0 && accounts.stream().allMatch(Account::ok);
        }
    }

    private final Map<String, Account> accounts = new HashMap<>();
    private final List<Account> ordered = new ArrayList<>();
    private final List<String> strangerExamples = new ArrayList<>();
    private long strangers;
    private long packets;
    private List<BufferCounters> buffers = List.of();
    private long invalidPackets;
    private long serviceChunksDiscarded;
    private final TestEvent.Decoder event = new TestEvent.Decoder();
    private final TraceStats.Decoder stats = new TraceStats.Decoder();
    private final Set<Integer> hostilePids;
    private long hostilePackets;

    private StressVerifier(List<Writer> writers, Set<Integer> hostilePids) {
        this.hostilePids = hostilePids;
        for (Writer writer : writers) {
            Account account = new Account(writer);
            if (accounts.putIfAbsent(writer.name(), account) != null) {
                throw new IllegalArgumentException("writer " + writer.name() + " listed twice");
            }
            ordered.add(account);
        }
    }

    /**
     * Verifies the trace in {@code file} against what {@code writers} attempted; packets
     * the service stamped with a pid in {@code hostilePids} are a hostile producer's
     * garbage, counted apart and not verified.
     */
    public static Result verify(Path file, List<Writer> writers, Set<Integer> hostilePids) throws IOException {
        StressVerifier verifier = new StressVerifier(writers, hostilePids);
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ);
             Arena arena = Arena.ofConfined()) {
            if (channel.size() > 0) {
                verifier.readTrace(channel.map(FileChannel.MapMode.READ_ONLY, 0, channel.size(), arena));
            }
        }
        return verifier.finish();
    }

    /** Verifies a trace held in memory. */
    public static Result verify(MemorySegment trace, List<Writer> writers) {
        StressVerifier verifier = new StressVerifier(writers, Set.of());
        verifier.readTrace(trace);
        return verifier.finish();
    }

    private void readTrace(MemorySegment trace) {
        ProtoDecoder top = new ProtoDecoder().reset(trace);
        TracePacket.Decoder packet = new TracePacket.Decoder();
        while (top.next()) {
            ProtoField field = top.field();
            if (field.id() != TRACE_PACKET_FIELD || field.wireType() != 2) {
                continue;
            }
            packets++;
            packet.reset(field);
            if (packet.hasError()) {
                stranger("a packet that does not parse at offset " + top.fieldStart());
                continue;
            }
            if (packet.has(TracePacket.TRACE_STATS_FIELD_NUMBER)) {
                readStats(packet.field(TracePacket.TRACE_STATS_FIELD_NUMBER));
            }
            if (packet.has(TracePacket.TRUSTED_PID_FIELD_NUMBER) && hostilePids.contains(packet.trustedPid())) {
                hostilePackets++;
            } else if (packet.has(TracePacket.FOR_TESTING_FIELD_NUMBER)) {
                readStressPacket(packet);
            }
        }
        if (top.hasError()) {
            stranger("the trace ends in a truncated packet at offset " + top.position());
        }
    }

    private void readStressPacket(TracePacket.Decoder packet) {
        event.reset(packet.field(TracePacket.FOR_TESTING_FIELD_NUMBER));
        if (event.hasError() || !event.hasStr()) {
            stranger("a for_testing packet without a writer");
            return;
        }
        String name = event.str();
        Account account = accounts.get(name);
        if (account == null) {
            stranger("a packet of unknown writer \"" + name + "\"");
            return;
        }
        if (!event.hasCounter() || !event.hasSeqValue() || !event.hasPayload()) {
            account.corrupt++;
            account.example("a packet without counter, checksum or payload");
            return;
        }
        long counter = event.counter();
        int checksum = StressPacket.headerChecksum(name.getBytes(StandardCharsets.US_ASCII), counter);
        long payloadChecksum = payloadChecksum(checksum, event.field(TestEvent.PAYLOAD_FIELD_NUMBER), 0);
        if (payloadChecksum < 0 || (int) payloadChecksum != event.seqValue()) {
            account.corrupt++;
            account.example("packet " + counter + ": checksum " + (payloadChecksum < 0 ? "payload does not parse"
                    : Integer.toUnsignedString((int) payloadChecksum) + " != " + Integer.toUnsignedString(event.seqValue())));
            return;
        }
        long sequenceId = packet.has(TracePacket.TRUSTED_PACKET_SEQUENCE_ID_FIELD_NUMBER)
                ? packet.trustedPacketSequenceId() & 0xFFFF_FFFFL : 0;
        if (account.sequenceId < 0) {
            account.sequenceId = sequenceId;
        } else if (account.sequenceId != sequenceId) {
            account.crossedSequences++;
            account.example("packet " + counter + " on sequence " + sequenceId + ", not " + account.sequenceId);
        }
        if (counter < account.nextCounter) {
            account.outOfOrder++;
            account.example("packet " + counter + " after packet " + (account.nextCounter - 1));
            return;
        }
        long gap = counter - account.nextCounter;
        if (gap > 0) {
            boolean flagged = packet.has(TracePacket.PREVIOUS_PACKET_DROPPED_FIELD_NUMBER)
                    && packet.previousPacketDropped() != 0;
            if (flagged) {
                account.lostFlagged += gap;
            } else {
                account.unaccounted += gap;
                account.example("packets " + account.nextCounter + ".." + (counter - 1)
                        + " missing, and packet " + counter + " says no loss");
            }
        }
        account.read++;
        account.nextCounter = counter + 1;
        if (event.hasIsLast() && event.isLast()) {
            account.sawLast = true;
        }
    }

    /**
     * Continues {@code checksum} over a TestPayload's strings in pre-order; -1 if it does
     * not parse. Nesting is bounded: a payload deeper than the writers make is corrupt.
     */
    private static long payloadChecksum(int checksum, ProtoField payload, int depth) {
        if (payload.wireType() != 2 || depth > 8) {
            return -1;
        }
        ProtoDecoder fields = new ProtoDecoder().reset(payload);
        while (fields.next()) {
            ProtoField field = fields.field();
            if (field.id() == 1) {
                if (field.wireType() != 2) {
                    return -1;
                }
                checksum = StressPacket.fnv(checksum, field.asSlice());
            }
        }
        if (fields.hasError()) {
            return -1;
        }
        ProtoDecoder nested = new ProtoDecoder().reset(payload);
        while (nested.next()) {
            if (nested.field().id() == 2) {
                long inner = payloadChecksum(checksum, nested.field(), depth + 1);
                if (inner < 0) {
                    return -1;
                }
                checksum = (int) inner;
            }
        }
        return checksum & 0xFFFF_FFFFL;
    }

    private void readStats(ProtoField field) {
        stats.reset(field);
        if (stats.hasError()) {
            return;
        }
        List<BufferCounters> counters = new ArrayList<>();
        RepeatedFieldIterator each = stats.bufferStats(new RepeatedFieldIterator());
        TraceStats.BufferStats.Decoder buffer = new TraceStats.BufferStats.Decoder();
        while (each.next()) {
            buffer.reset(each.field());
            counters.add(new BufferCounters(buffer.chunksWritten(), buffer.chunksOverwritten(),
                    buffer.chunksDiscarded(), buffer.abiViolations(), buffer.patchesFailed(),
                    buffer.traceWriterPacketLoss()));
        }
        buffers = List.copyOf(counters);
        invalidPackets = stats.invalidPackets();
        serviceChunksDiscarded = stats.chunksDiscarded();
    }

    private void stranger(String what) {
        strangers++;
        if (strangerExamples.size() < EXAMPLES) {
            strangerExamples.add(what);
        }
    }

    private Result finish() {
        for (Account account : ordered) {
            Writer writer = account.writer;
            long tail = writer.attempted() - account.nextCounter;
            if (tail < 0) {
                // A killed writer may die after finishing a packet and before counting it.
                if (!(writer.killed() && tail == -1)) {
                    account.unaccounted += -tail;
                    account.example((-tail) + " more packets read than the writer attempted");
                }
                continue;
            }
            if (tail == 0) {
                continue;
            }
            BufferCounters buffer = writer.buffer() < buffers.size() ? buffers.get(writer.buffer()) : null;
            if (writer.buffer() == StressRun.DISCARD_BUFFER && buffer != null && buffer.chunksDiscarded() > 0) {
                account.lostDiscarded += tail;
            } else if (writer.killed() && tail <= MAX_LOST_AT_KILL) {
                account.lostAtKill += tail;
            } else {
                account.unaccounted += tail;
                account.example("the last " + tail + " packets of " + writer.attempted() + " missing");
            }
        }
        return new Result(List.copyOf(ordered), strangers, List.copyOf(strangerExamples),
                buffers, invalidPackets, serviceChunksDiscarded, packets, hostilePackets);
    }
}
