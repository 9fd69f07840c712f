package dev.ffmtrace.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/** The README fits a screen and leads to every page of {@code docs/}, and no page links to a file that is not there. */
class DocsLinksTest {
    /** A Markdown link to a file of the tree: {@code [text](path)} or {@code [text](path#anchor)}, not a URL. */
    private static final Pattern LOCAL_LINK = Pattern.compile("\\]\\((?![a-z]+:)([^)#\\s]+)(?:#[^)]*)?\\)");

    private static Path root() {
        return Path.of(System.getProperty("ffmtrace.docs", "../docs")).toAbsolutePath().normalize().getParent();
    }

    private static List<Path> links(Path page) throws IOException {
        List<Path> targets = new ArrayList<>();
        Matcher matcher = LOCAL_LINK.matcher(Files.readString(page));
        while (matcher.find()) {
            targets.add(page.getParent().resolve(matcher.group(1)).normalize());
        }
        return targets;
    }

    @Test
    void theReadmeFitsTheBriefOf200Lines() throws IOException {
        long lines = Files.readAllLines(root().resolve("README.md")).size();
        assertTrue(lines <= 200, "README.md has " + lines + " lines: move detail into docs/");
    }

    @Test
    void everyLocalLinkLeadsToAFileAndEveryDocsPageIsReachableFromTheReadme() throws IOException {
        Set<Path> pages = new TreeSet<>();
        try (Stream<Path> files = Files.walk(root().resolve("docs"))) {
            files.filter(f -> f.toString().endsWith(".md")).forEach(pages::add);
        }
        Set<Path> reached = new TreeSet<>();
        List<String> broken = new ArrayList<>();
        Deque<Path> toRead = new ArrayDeque<>(List.of(root().resolve("README.md")));
        while (!toRead.isEmpty()) {
            Path page = toRead.pop();
            if (!reached.add(page)) {
                continue;
            }
            for (Path target : links(page)) {
                if (!Files.exists(target)) {
                    broken.add(root().relativize(page) + " -> " + root().relativize(target));
                } else if (target.toString().endsWith(".md")) {
                    toRead.push(target);
                }
            }
        }
        assertEquals(List.of(), broken, "links to files that are not there");
        Set<Path> orphans = new TreeSet<>(pages);
        orphans.removeAll(reached);
        assertEquals(Set.of(), orphans, "pages of docs/ no link from the README leads to");
    }
}
