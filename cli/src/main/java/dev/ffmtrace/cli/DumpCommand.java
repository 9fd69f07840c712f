package dev.ffmtrace.cli;

import com.google.protobuf.CodedInputStream;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.TextFormat;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import perfetto.protos.TracePacketOuterClass.TracePacket;
import perfetto.protos.TrackDescriptorOuterClass.TrackDescriptor;
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
        Summary summary = new Summary();
        PrintStream out = System.out;
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
                summary.add(packet);
            }
        } catch (InvalidProtocolBufferException e) {
            System.err.println(trace + ": not a valid trace file: " + e.getMessage());
            return 2;
        }
        summary.print(out);
        return 0;
    }

    /** Tracks, slices per track (with nesting checked), and data losses. */
    static final class Summary {
        long packets;
        long losses;
        long statsPackets;
        final Map<Long, String> trackNames = new LinkedHashMap<>();
        final Map<Long, long[]> slicesPerTrack = new TreeMap<>();
        final Map<Long, Deque<Long>> openSlices = new TreeMap<>();
        long unbalancedEnds;

        void add(TracePacket packet) {
            packets++;
            if (packet.getPreviousPacketDropped() != 0) {
                losses++;
            }
            if (packet.hasTraceStats()) {
                statsPackets++;
            }
            if (packet.hasTrackDescriptor()) {
                TrackDescriptor track = packet.getTrackDescriptor();
                String name = track.hasName() ? track.getName()
                        : track.hasThread() ? track.getThread().getThreadName() + " (tid " + track.getThread().getTid() + ")"
                        : track.hasProcess() ? track.getProcess().getProcessName() + " (pid " + track.getProcess().getPid() + ")"
                        : "track";
                trackNames.put(track.getUuid(), name);
            }
            if (packet.hasTrackEvent()) {
                TrackEvent event = packet.getTrackEvent();
                long track = event.getTrackUuid();
                long[] counts = slicesPerTrack.computeIfAbsent(track, t -> new long[3]);
                Deque<Long> open = openSlices.computeIfAbsent(track, t -> new ArrayDeque<>());
                switch (event.getType()) {
                    case TYPE_SLICE_BEGIN -> {
                        counts[0]++;
                        open.push(packet.getTimestamp());
                    }
                    case TYPE_SLICE_END -> {
                        if (open.poll() == null) {
                            unbalancedEnds++;
                        }
                    }
                    case TYPE_INSTANT -> counts[1]++;
                    case TYPE_COUNTER -> counts[2]++;
                    default -> { }
                }
            }
        }

        void print(PrintStream out) {
            out.println("# summary: " + packets + " packets, " + trackNames.size() + " track descriptors, "
                    + losses + " packets after a data loss, " + statsPackets + " trace_stats packets");
            for (Map.Entry<Long, long[]> track : slicesPerTrack.entrySet()) {
                long[] counts = track.getValue();
                out.println("# track " + track.getKey() + " \"" + trackNames.getOrDefault(track.getKey(), "?") + "\": "
                        + counts[0] + " slices, " + counts[1] + " instants, " + counts[2] + " counter values, "
                        + openSlices.get(track.getKey()).size() + " slices left open");
            }
            if (unbalancedEnds > 0) {
                out.println("# " + unbalancedEnds + " slice ends without a begin");
            }
        }
    }
}
