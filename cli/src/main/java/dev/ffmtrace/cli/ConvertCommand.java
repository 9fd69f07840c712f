package dev.ffmtrace.cli;

import com.google.protobuf.TextFormat;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import perfetto.protos.TraceOuterClass.Trace;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

/** Text-format {@code Trace} to a binary trace file, with protobuf-java's parser. */
@Command(name = "convert", mixinStandardHelpOptions = true,
        description = "Convert a text-format Trace (.pbtxt) into a binary trace file (.pftrace).")
final class ConvertCommand implements Callable<Integer> {
    @Parameters(index = "0", paramLabel = "IN.pbtxt", description = "Text-format Trace: packet { ... } blocks.")
    Path input;

    @Parameters(index = "1", paramLabel = "OUT.pftrace", description = "The binary trace file to write.")
    Path output;

    @Override
    public Integer call() throws IOException {
        Trace.Builder trace = Trace.newBuilder();
        try {
            TextFormat.merge(Files.readString(input, StandardCharsets.UTF_8), trace);
        } catch (TextFormat.ParseException e) {
            System.err.println(input + ":" + e.getLine() + ":" + e.getColumn() + ": " + e.getMessage());
            return 2;
        }
        byte[] bytes = trace.build().toByteArray();
        Files.write(output, bytes);
        System.out.println("wrote " + trace.getPacketCount() + " packets, " + bytes.length + " bytes to " + output);
        return 0;
    }
}
