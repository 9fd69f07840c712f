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

/** The README's "Use as a library" shows every example verbatim, so it cannot drift from the code the tests run. */
class ReadmeTest {
    /** A code block the README introduces with the example's path in backquotes on the line before. */
    private static final Pattern EXAMPLE_BLOCK = Pattern.compile(
            "`examples/src/main/java/dev/ffmtrace/examples/(\\w+)\\.java`[^\\n]*\\n```java\\n(.*?)```", Pattern.DOTALL);

    static Path sources() {
        return Path.of(System.getProperty("ffmtrace.examples.sources", "src/main/java"))
                .resolve("dev/ffmtrace/examples");
    }

    /** The README's example blocks by class name. */
    static Map<String, String> readmeExamples() throws IOException {
        String readme = Files.readString(Path.of(System.getProperty("ffmtrace.readme", "../README.md")));
        Map<String, String> blocks = new TreeMap<>();
        Matcher matcher = EXAMPLE_BLOCK.matcher(readme);
        while (matcher.find()) {
            blocks.put(matcher.group(1), matcher.group(2));
        }
        return blocks;
    }

    @Test
    void theReadmeShowsEveryExampleAsItsSourceFileIs() throws IOException {
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
        Map<String, String> readme = readmeExamples();
        assertEquals(sources.keySet(), readme.keySet(), "examples in the README");
        sources.forEach((name, source) -> assertEquals(source, readme.get(name),
                name + ".java differs from its README block: copy it into README.md"));
    }
}
