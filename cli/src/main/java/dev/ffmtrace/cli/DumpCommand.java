package dev.ffmtrace.cli;

import com.google.protobuf.CodedInputStream;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.TextFormat;
import dev.ffmtrace.tracing.trackevent.TrackEventReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.nio.channels.FileChannel;
import java.nio.channels.FileChannel.MapMode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import perfetto.protos.TracePacketOuterClass.TracePacket;
import perfetto.protos.TrackEventOuterClass.TrackEvent;
import picocli.CommandLine.Command;
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

    @Parameters(index = "0", paramLabel = "FILE.pftrace", description = "A binary trace file.")
    Path trace;

    @Override
    public Integer call() throws IOException {
        PrintStream out = System.out;
        long packets = 0;
        long statsPackets = 0;
        try (InputStream in = Files.newInputStream(trace)) {
            CodedInputStream input = CodedInputStream.newInstance(in);
            input.setSizeLimit(Integer.MAX_VALUE);
            while (!input.isAtEnd()) {
                int tag = input.readTag();
                if (tag != TRACE_PACKET_TAG) {
                    input.skipField(tag);
                    continue;
                }
                TracePacket packet = TracePacket.parseFrom(input.readBytes());
                out.println("packet {");
                for (String line : TextFormat.printer().printToString(packet).split("\n")) {
                    if (!line.isEmpty()) {
                        out.println("  " + line);
                    }
                }
                out.println("}");
                packets++;
                statsPackets += packet.hasTraceStats() ? 1 : 0;
            }
        } catch (InvalidProtocolBufferException e) {
            System.err.println(trace + ": not a valid trace file: " + e.getMessage());
            return 2;
        }
        try (Arena arena = Arena.ofConfined(); FileChannel file = FileChannel.open(trace)) {
            TrackEventReader.Decoded decoded = TrackEventReader.read(file.map(MapMode.READ_ONLY, 0, file.size(), arena));
            printSummary(out, packets, statsPackets, decoded);
        }
        return 0;
    }

    /**
     * Tracks, slices per track (nesting checked) and data losses, from the trace as the
     * trace processor would resolve it (interned names, default tracks, timestamp deltas).
     */
    static void printSummary(PrintStream out, long packets, long statsPackets, TrackEventReader.Decoded trace) {
        out.println("# summary: " + packets + " packets, " + trace.tracks().size() + " track descriptors, "
                + trace.lossMarkers() + " packets after a data loss, " + statsPackets + " trace_stats packets, "
                + trace.undecodable() + " packets undecodable for lost incremental state");
        // Per track: slices, instants, counter values, and slices open now.
        Map<Long, long[]> counts = new TreeMap<>(Long::compareUnsigned);
        long unbalancedEnds = 0;
        for (TrackEventReader.Event event : trace.events()) {
            long[] track = counts.computeIfAbsent(event.trackUuid(), t -> new long[4]);
            switch (event.type()) {
                case TrackEvent.Type.TYPE_SLICE_BEGIN_VALUE -> {
                    track[0]++;
                    track[3]++;
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
