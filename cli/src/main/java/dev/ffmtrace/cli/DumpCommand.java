package dev.ffmtrace.cli;

import com.google.protobuf.ByteString;
import com.google.protobuf.CodedInputStream;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.TextFormat;
import dev.ffmtrace.tracing.trackevent.TrackEventReader;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import perfetto.protos.TracePacketOuterClass.TracePacket;
import perfetto.protos.TrackEventOuterClass.TrackEvent;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * Prints a trace file packet by packet in protobuf text format, then a summary of its
 * tracks, slices and losses. The summary lines start with {@code #}, so the whole output
 * is itself a text-format {@code Trace} that {@code convert} reads back.
 */
@Command(name = "dump", mixinStandardHelpOptions = true,
        description = "Print a trace file's packets in protobuf text format, then a summary.")
final class DumpCommand implements Callable<Integer> {
    private static final int TRACE_PACKET_TAG = (1 << 3) | 2;
    /** Indexes of the dump's counters. */
    private static final int PACKETS = 0;
    private static final int STATS_PACKETS = 1;
    private static final int MALFORMED = 2;

    @Parameters(index = "0", arity = "0..1", paramLabel = "FILE.pftrace", description = "A binary trace file.")
    Path trace;

    @Option(names = "--folded", arity = "0..1", fallbackValue = "unreleased", paramLabel = "unreleased|allocated",
            description = "Print the trace's heap profiles as folded stacks instead, 'process;root;...;leaf BYTES': "
                    + "unreleased bytes (allocated minus freed, the default) or allocated ones.")
    String folded;

    @Override
    public Integer call() throws CliFailure {
        if (folded != null && trace == null && !folded.equals("unreleased") && !folded.equals("allocated")) {
            // "--folded FILE": the optional mode was the file.
            trace = Path.of(folded);
            folded = "unreleased";
        }
        if (trace == null) {
            throw new CliFailure("a trace file is required", CliFailure.USAGE);
        }
        if (folded != null && !folded.equals("unreleased") && !folded.equals("allocated")) {
            throw new CliFailure("--folded takes unreleased or allocated, not " + folded, CliFailure.USAGE);
        }
        byte[] bytes = readOnce();
        if (folded != null) {
            return printFolded(bytes, folded.equals("unreleased"));
        }
        PrintStream out = System.out;
        long[] counts = new long[3];
        // The well-formed packets, for the summary's decoder.
        ByteArrayOutputStream wellFormed = new ByteArrayOutputStream(bytes.length);
        boolean whole = forEachPacket(bytes, (offset, end, payload) -> {
            long number = ++counts[PACKETS];
            TracePacket packet;
            try {
                packet = TracePacket.parseFrom(payload);
            } catch (InvalidProtocolBufferException e) {
                counts[MALFORMED]++;
                System.err.println("ffmtrace dump: " + trace + ": packet " + number + " at byte " + offset
                        + " is malformed: " + e.getMessage());
                out.println("# packet " + number + " at byte " + offset + ": malformed, skipped");
                return;
            }
            wellFormed.write(bytes, offset, end - offset);
            out.println("packet {");
            for (String line : TextFormat.printer().printToString(packet).split("\n")) {
                if (!line.isEmpty()) {
                    out.println("  " + line);
                }
            }
            out.println("}");
            counts[STATS_PACKETS] += packet.hasTraceStats() ? 1 : 0;
        });
        printSummary(out, counts[PACKETS], counts[STATS_PACKETS], counts[MALFORMED],
                TrackEventReader.read(MemorySegment.ofArray(wellFormed.toByteArray())));
        return !whole || counts[MALFORMED] > 0 ? CliFailure.USAGE : 0;
    }

    /** The heap profiles as folded stacks; a malformed packet is reported and skipped, as the dump does. */
    private int printFolded(byte[] bytes, boolean unreleased) {
        HeapProfiles profiles = new HeapProfiles();
        boolean[] malformed = new boolean[1];
        boolean whole = forEachPacket(bytes, (offset, end, payload) -> {
            try {
                profiles.add(TracePacket.parseFrom(payload));
            } catch (InvalidProtocolBufferException e) {
                malformed[0] = true;
                System.err.println("ffmtrace dump: " + trace + ": the packet at byte " + offset + " is malformed: "
                        + e.getMessage());
            }
        });
        profiles.folded(unreleased).forEach(System.out::println);
        return !whole || malformed[0] ? CliFailure.USAGE : 0;
    }

    /** What a walk over a trace's packets does with each: where its field starts and ends in the file, and its bytes. */
    @FunctionalInterface
    private interface PacketVisitor {
        void visit(int offset, int end, ByteString payload);
    }

    /**
     * Hands each packet (field 1 of the Trace; other fields are skipped) to {@code visitor};
     * false, after saying so, if a field's framing is broken: nothing after it can be found.
     */
    private boolean forEachPacket(byte[] bytes, PacketVisitor visitor) {
        CodedInputStream input = CodedInputStream.newInstance(bytes);
        input.setSizeLimit(Integer.MAX_VALUE);
        while (true) {
            int offset = input.getTotalBytesRead();
            ByteString payload;
            try {
                if (input.isAtEnd()) {
                    return true;
                }
                int tag = input.readTag();
                if (tag != TRACE_PACKET_TAG) {
                    input.skipField(tag);
                    continue;
                }
                payload = input.readBytes();
            } catch (IOException e) {
                System.err.println("ffmtrace dump: " + trace + ": not a valid trace file at byte " + offset + ": "
                        + e.getMessage() + " (the rest is not read)");
                return false;
            }
            visitor.visit(offset, input.getTotalBytesRead(), payload);
        }
    }

    /**
     * The whole input, read once: a FIFO or a process substitution ({@code <(...)}) can
     * only be read once, and both the packets and the summary come from these bytes.
     */
    private byte[] readOnce() throws CliFailure {
        if (Files.isDirectory(trace)) {
            throw new CliFailure(trace + ": is a directory", CliFailure.USAGE);
        }
        try (InputStream in = Files.newInputStream(trace)) {
            return in.readAllBytes();
        } catch (IOException e) {
            throw new CliFailure(trace + ": " + ErrorReporter.reason(e), CliFailure.USAGE);
        } catch (OutOfMemoryError e) {
            throw new CliFailure(trace + ": too large to read into memory: " + e.getMessage(), CliFailure.FAILED);
        }
    }

    /**
     * Tracks, slices per track (nesting checked) and data losses, from the trace as the
     * trace processor would resolve it (interned names, default tracks, timestamp deltas).
     */
    private static void printSummary(PrintStream out, long packets, long statsPackets, long malformed,
                             TrackEventReader.Decoded trace) {
        out.println("# summary: " + packets + " packets, " + trace.tracks().size() + " track descriptors, "
                + trace.lossMarkers() + " packets after a data loss, " + statsPackets + " trace_stats packets, "
                + trace.undecodable() + " packets undecodable for lost incremental state, " + malformed + " malformed packets");
        // Per track: slices, instants, counter values, and slices open now.
        Map<Long, long[]> counts = new TreeMap<>(Long::compareUnsigned);
        // Slices by name, over all tracks: what a program's own count of its work is checked against.
        Map<String, long[]> slicesByName = new TreeMap<>();
        long unbalancedEnds = 0;
        for (TrackEventReader.Event event : trace.events()) {
            long[] track = counts.computeIfAbsent(event.trackUuid(), t -> new long[4]);
            switch (event.type()) {
                case TrackEvent.Type.TYPE_SLICE_BEGIN_VALUE -> {
                    track[0]++;
                    track[3]++;
                    slicesByName.computeIfAbsent(String.valueOf(event.name()), n -> new long[1])[0]++;
                }
                case TrackEvent.Type.TYPE_SLICE_END_VALUE -> {
                    if (track[3] == 0) {
                        unbalancedEnds++;
                    } else {
                        track[3]--;
                    }
                }
                case TrackEvent.Type.TYPE_INSTANT_VALUE -> track[1]++;
                case TrackEvent.Type.TYPE_COUNTER_VALUE -> track[2]++;
                default -> { }
            }
        }
        for (Map.Entry<Long, long[]> track : counts.entrySet()) {
            long[] count = track.getValue();
            out.println("# track " + Long.toUnsignedString(track.getKey()) + " \"" + name(trace.tracks().get(track.getKey()))
                    + "\": " + count[0] + " slices, " + count[1] + " instants, " + count[2] + " counter values, "
                    + count[3] + " slices left open");
        }
        for (Map.Entry<String, long[]> name : slicesByName.entrySet()) {
            out.println("# slices named \"" + name.getKey() + "\": " + name.getValue()[0]);
        }
        if (unbalancedEnds > 0) {
            out.println("# " + unbalancedEnds + " slice ends without a begin");
        }
    }

    private static String name(TrackEventReader.TrackInfo track) {
        if (track == null) {
            return "?";
        }
        return track.name() != null ? track.name()
                : track.threadName() != null || track.tid() != 0 ? track.threadName() + " (tid " + track.tid() + ")"
                : track.processName() != null ? track.processName() + " (pid " + track.pid() + ")"
                : "track";
    }
}
