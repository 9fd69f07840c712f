package dev.ffmtrace.tracing.buffer;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.reflect.RecordComponent;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;

/**
 * Runs an operation script on one {@link TraceBufferV2} and prints what it sees, in the
 * format of the conformance cases recorded from Perfetto's C++ buffer (see
 * {@code conformance/README.md} in the shared spec): {@code copy}, {@code patch},
 * {@code read}/{@code readv}, {@code stats}, {@code info} and {@code echo} lines, after a
 * {@code # Buffer: <size> <overwrite|discard>} header. The same format pins the cases
 * where ffmtrace deliberately differs from the C++ ({@code divergence/}).
 */
final class BufferScript {
    private static final HexFormat HEX = HexFormat.of();
    private static final ClientIdentity IDENTITY = new ClientIdentity(1000, 4242);

    private BufferScript() {
    }

    /** The lines of the resource {@code name}, next to this class. */
    static List<String> resource(String name) {
        try (InputStream in = BufferScript.class.getResourceAsStream(name)) {
            if (in == null) {
                throw new IllegalArgumentException("no resource " + name);
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8).lines().toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Runs {@code script} on a fresh buffer and returns the lines it printed. */
    static List<String> run(List<String> script) {
        List<String> out = new ArrayList<>();
        try (Arena arena = Arena.ofConfined()) {
            TraceBufferV2 buffer = null;
            for (String line : script) {
                String trimmed = line.strip();
                if (trimmed.startsWith("# Buffer:")) {
                    String[] args = trimmed.substring("# Buffer:".length()).strip().split("\\s+");
                    OverwritePolicy policy = switch (args[1]) {
                        case "overwrite" -> OverwritePolicy.RING_BUFFER;
                        case "discard" -> OverwritePolicy.DISCARD;
                        default -> throw new IllegalArgumentException(line);
                    };
                    buffer = new TraceBufferV2(arena.allocate(Long.parseLong(args[0]), 16), policy);
                    continue;
                }
                if (trimmed.isEmpty() || trimmed.startsWith("#")) {
                    continue;
                }
                if (buffer == null) {
                    throw new IllegalArgumentException("script has no '# Buffer:' line before " + line);
                }
                execute(buffer, trimmed.split("\\s+"), out);
            }
        }
        return out;
    }

    private static void execute(TraceBufferV2 buffer, String[] args, List<String> out) {
        switch (args[0]) {
            case "copy" -> {
                byte[] payload = payload(args[7]);
                buffer.copyChunkUntrusted(new ChunkCommit().producer(Integer.parseInt(args[1]), IDENTITY)
                        .writerId(Integer.parseInt(args[2])).chunkId(Integer.parseUnsignedInt(args[3]))
                        .flags(Integer.parseInt(args[4])).numFragments(Integer.parseInt(args[5]))
                        .complete(args[6].equals("1")), MemorySegment.ofArray(payload), payload.length);
            }
            case "patch" -> {
                ChunkPatches patches = new ChunkPatches();
                int i = 4;
                for (; i + 1 < args.length; i += 2) {
                    byte[] data = HEX.parseHex(args[i + 1]);
                    patches.add(Long.parseLong(args[i]), data[0], data[1], data[2], data[3]);
                }
                boolean ok = buffer.tryPatchChunkContents(Integer.parseInt(args[1]), Integer.parseInt(args[2]),
                        Integer.parseUnsignedInt(args[3]), patches, args[i].equals("1"));
                out.add("patch " + (ok ? 1 : 0));
            }
            case "read", "readv" -> read(buffer, args.length > 1 ? Integer.parseInt(args[1]) : Integer.MAX_VALUE,
                    args[0].equals("readv"), out);
            case "stats" -> stats(buffer.stats(), out);
            case "info" -> {
                out.add("size " + buffer.size());
                out.add("used_size " + buffer.usedSize());
                out.add("has_data " + (buffer.hasData() ? 1 : 0));
            }
            case "echo" -> out.add(String.join(" ", Arrays.asList(args).subList(1, args.length)));
            default -> throw new IllegalArgumentException("unknown script command: " + String.join(" ", args));
        }
    }

    private static void read(TraceBufferV2 buffer, int max, boolean verbose, List<String> out) {
        TracePacketView packet = new TracePacketView();
        buffer.beginRead();
        for (int n = 0; n < max && buffer.readNextTracePacket(packet); n++) {
            String line = "pkt " + packet.producerId() + " " + packet.writerId() + " "
                    + (packet.previousPacketDropped() ? 1 : 0) + " " + HEX.formatHex(packet.toByteArray());
            out.add(verbose ? line + " " + packet.previousPacketDroppedReasons() + " " + packet.fragmentCount() : line);
        }
    }

    /** Every counter as {@code name value}, in BufferStats field order, named as in the proto. */
    private static void stats(TraceBufferStats stats, List<String> out) {
        for (RecordComponent component : TraceBufferStats.class.getRecordComponents()) {
            try {
                String name = component.getName().replaceAll("([A-Z])", "_$1").toLowerCase(Locale.ROOT);
                out.add(name + " " + component.getAccessor().invoke(stats));
            } catch (ReflectiveOperationException e) {
                throw new AssertionError(e);
            }
        }
    }

    /** {@code -}, or {@code +}-joined parts, each plain hex or {@code <hex byte>*<count>}. */
    static byte[] payload(String spec) {
        if (spec.equals("-")) {
            return new byte[0];
        }
        List<byte[]> parts = new ArrayList<>();
        int length = 0;
        for (String part : spec.split("\\+")) {
            int star = part.indexOf('*');
            byte[] bytes;
            if (star < 0) {
                bytes = HEX.parseHex(part);
            } else {
                bytes = new byte[Integer.parseInt(part.substring(star + 1))];
                Arrays.fill(bytes, HEX.parseHex(part.substring(0, star))[0]);
            }
            parts.add(bytes);
            length += bytes.length;
        }
        byte[] payload = new byte[length];
        int at = 0;
        for (byte[] part : parts) {
            System.arraycopy(part, 0, payload, at, part.length);
            at += part.length;
        }
        return payload;
    }
}
