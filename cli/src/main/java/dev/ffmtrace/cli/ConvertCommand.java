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

/**
 * Text-format {@code Trace} to a binary trace file, with protobuf-java's parser.
 *
 * <p>{@code previous_packet_dropped} was a bool in older Perfetto and is a loss-reason bit
 * mask (uint32) now; texts written for the old schema say {@code true}/{@code false},
 * which this command reads as 1/0 (same bytes on the wire).
 */
@Command(name = "convert", mixinStandardHelpOptions = true,
        description = "Convert a text-format Trace (.pbtxt) into a binary trace file (.pftrace).")
final class ConvertCommand implements Callable<Integer> {
    private static final String LOSS_FIELD = "previous_packet_dropped";

    @Parameters(index = "0", paramLabel = "IN.pbtxt", description = "Text-format Trace: packet { ... } blocks.")
    Path input;

    @Parameters(index = "1", paramLabel = "OUT.pftrace", description = "The binary trace file to write.")
    Path output;

    @Override
    public Integer call() throws IOException {
        Trace.Builder trace = Trace.newBuilder();
        try {
            TextFormat.merge(boolLossFlagsAsNumbers(Files.readString(input, StandardCharsets.UTF_8)), trace);
        } catch (TextFormat.ParseException e) {
            // The message starts with the line and column when the parser knows them.
            System.err.println(input + (e.getLine() >= 0 ? ":" : ": ") + e.getMessage());
            return 2;
        }
        byte[] bytes = trace.build().toByteArray();
        Files.write(output, bytes);
        System.out.println("wrote " + trace.getPacketCount() + " packets, " + bytes.length + " bytes to " + output);
        return 0;
    }

    /**
     * Rewrites {@code previous_packet_dropped: true|false} outside strings and comments to
     * {@code 1}/{@code 0}, padded with spaces so parse errors keep their columns.
     */
    static String boolLossFlagsAsNumbers(String text) {
        StringBuilder out = new StringBuilder(text);
        int i = 0;
        while (i < text.length()) {
            char c = text.charAt(i);
            if (c == '"' || c == '\'') {
                i = skipString(text, i);
            } else if (c == '#') {
                int end = text.indexOf('\n', i);
                i = end < 0 ? text.length() : end;
            } else if (text.startsWith(LOSS_FIELD, i) && (i == 0 || !isIdentifierPart(text.charAt(i - 1)))) {
                int at = skipSpaces(text, i + LOSS_FIELD.length());
                if (at < text.length() && text.charAt(at) == ':') {
                    at = skipSpaces(text, at + 1);
                    replaceWord(out, text, at, "true", "1");
                    replaceWord(out, text, at, "false", "0");
                }
                i += LOSS_FIELD.length();
            } else {
                i++;
            }
        }
        return out.toString();
    }

    private static void replaceWord(StringBuilder out, String text, int at, String word, String number) {
        int end = at + word.length();
        if (text.startsWith(word, at) && (end == text.length() || !isIdentifierPart(text.charAt(end)))) {
            out.replace(at, end, number + " ".repeat(word.length() - number.length()));
        }
    }

    private static int skipString(String text, int start) {
        char quote = text.charAt(start);
        int i = start + 1;
        while (i < text.length() && text.charAt(i) != quote && text.charAt(i) != '\n') {
            i += text.charAt(i) == '\\' ? 2 : 1;
        }
        return i + 1;
    }

    private static int skipSpaces(String text, int i) {
        while (i < text.length() && Character.isWhitespace(text.charAt(i))) {
            i++;
        }
        return i;
    }

    private static boolean isIdentifierPart(char c) {
        return Character.isLetterOrDigit(c) || c == '_';
    }
}
