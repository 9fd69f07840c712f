package dev.ffmtrace.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The guides in {@code docs/} show every example verbatim, so they cannot drift from the code the
 * tests run; wherever a guide moves an example, this finds it.
 */
class DocsExamplesTest {
    /** A code block a page introduces with the example's path in backquotes on the line before. */
    private static final Pattern EXAMPLE_BLOCK = Pattern.compile(
            "`examples/src/main/java/dev/ffmtrace/examples/(\\w+)\\.java`[^\\n]*\\n```java\\n(.*?)```", Pattern.DOTALL);

    static Path sources() {
        return Path.of(System.getProperty("ffmtrace.examples.sources", "src/main/java"))
                .resolve("dev/ffmtrace/examples");
    }

    /** Every example block of every page under {@code docs/}, by class name; a second, different copy fails. */
    static Map<String, String> docsExamples() throws IOException {
        Map<String, String> blocks = new TreeMap<>();
        try (Stream<Path> pages = Files.walk(Path.of(System.getProperty("ffmtrace.docs", "../docs")))) {
            for (Path page : pages.filter(p -> p.toString().endsWith(".md")).sorted().toList()) {
                Matcher matcher = EXAMPLE_BLOCK.matcher(Files.readString(page));
                while (matcher.find()) {
                    String earlier = blocks.putIfAbsent(matcher.group(1), matcher.group(2));
                    assertTrue(earlier == null || earlier.equals(matcher.group(2)),
                            matcher.group(1) + " is shown twice, differently (the second time in " + page + ")");
                }
            }
        }
        return blocks;
    }

    @Test
    void theDocsShowEveryExampleAsItsSourceFileIs() throws IOException {
        Map<String, String> sources;
        try (Stream<Path> files = Files.list(sources())) {
            sources = files.filter(f -> !f.getFileName().toString().equals("package-info.java"))
                    .collect(Collectors.toMap(f -> f.getFileName().toString().replace(".java", ""), f -> {
                        try {
                            return Files.readString(f);
                        } catch (IOException e) {
                            throw new UncheckedIOException(e);
                        }
                    }, (a, b) -> a, TreeMap::new));
        }
        assertTrue(sources.containsKey("OfflineTrackEvent"), sources.keySet().toString());
        Map<String, String> docs = docsExamples();
        assertEquals(sources.keySet(), docs.keySet(), "examples shown in docs/");
        sources.forEach((name, source) -> assertEquals(source, docs.get(name),
                name + ".java differs from its block in docs/: copy it there"));
    }
}
