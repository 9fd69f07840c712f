package dev.ffmtrace.tracing.trackevent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.perfetto.protos.DataSourceConfig;
import dev.ffmtrace.perfetto.protos.TrackEventConfig;
import dev.ffmtrace.protozero.HeapBuffered;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class CategorySelectionTest {
    private static final Category REQUESTS = new Category("requests");
    private static final Category QUEUE = new Category("queue");
    private static final Category DEMO_DEBUG = new Category("demo.debug", "debug");
    private static final Map<String, Category> DEMO = Map.of("requests", REQUESTS, "queue", QUEUE,
            "demo.debug", DEMO_DEBUG);

    /**
     * Every answer of Perfetto's SDK in category-oracle.txt (scripts/category-oracle asked
     * TrackEventInternal::IsCategoryEnabled): 307 configs, 19 categories each, the same here.
     */
    @Test
    void decidesEveryCaseAsPerfettosSdk() throws IOException {
        Map<String, Category> declared = new LinkedHashMap<>();
        List<Category> asked = new ArrayList<>();
        int configs = 0;
        List<String> wrong = new ArrayList<>();
        for (String line : oracle()) {
            if (line.startsWith("#")) {
                continue;
            }
            String[] fields = line.split("\\|", -1);
            switch (fields[0]) {
                case "declare" -> declared.put(fields[1], category(fields[1], fields[2]));
                case "category" -> asked.add(fields[1].contains(",") ? Category.group(fields[1])
                        : declared.getOrDefault(fields[1], category(fields[1], fields[2])));
                case "config" -> {
                    configs++;
                    CategorySelection selection = CategorySelection.of(list(fields[1]), list(fields[2]),
                            list(fields[3]), list(fields[4]));
                    String expected = fields[5];
                    assertEquals(asked.size(), expected.length());
                    for (int i = 0; i < asked.size(); i++) {
                        boolean enabled = selection.enables(asked.get(i), declared);
                        if (enabled != (expected.charAt(i) == '1')) {
                            wrong.add(selection + ": " + asked.get(i).name() + " should be "
                                    + (enabled ? "disabled" : "enabled"));
                        }
                    }
                }
                default -> throw new AssertionError("unknown line " + line);
            }
        }
        assertEquals(307, configs);
        assertEquals(19, asked.size());
        assertEquals(List.of(), wrong);
    }

    private static List<String> oracle() throws IOException {
        try (InputStream in = CategorySelectionTest.class.getResourceAsStream("category-oracle.txt")) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8).lines().toList();
        }
    }

    private static Category category(String name, String tags) {
        return new Category(name, list(tags).toArray(String[]::new));
    }

    private static List<String> list(String items) {
        return items.isEmpty() ? List.of() : Arrays.asList(items.split(";", -1));
    }

    /** The issue's three sessions over the demo's categories, from a DataSourceConfig as the service sends it. */
    @Test
    void readsTheSelectionFromTheDataSourceConfig() {
        assertEquals(List.of(true, true, false), decide(config(null)));
        assertEquals(List.of(false, true, false), decide(config(c -> {
            c.addEnabledCategories("queue");
            c.addDisabledCategories("*");
        })));
        assertEquals(List.of(true, true, true), decide(config(c -> c.addEnabledTags("debug"))));
    }

    private static List<Boolean> decide(byte[] dataSourceConfig) {
        CategorySelection selection = CategorySelection.fromDataSourceConfig(dataSourceConfig);
        assertEquals(0, selection.malformedPatterns());
        return List.of(selection.enables(REQUESTS, DEMO), selection.enables(QUEUE, DEMO),
                selection.enables(DEMO_DEBUG, DEMO));
    }

    private static byte[] config(java.util.function.Consumer<TrackEventConfig> trackEvent) {
        HeapBuffered<DataSourceConfig> config = new HeapBuffered<>(DataSourceConfig.FACTORY);
        config.get().setName("track_event");
        if (trackEvent != null) {
            trackEvent.accept(config.get().setTrackEventConfig());
        }
        return config.toByteArray();
    }

    @Test
    void patternsOutsidePerfettosSyntaxAreDecidedAsItsReleaseBuildAndCounted() {
        CategorySelection selection = CategorySelection.of(List.of("re*q"), List.of("*queue"), List.of("*"),
                List.of("de*g"));
        assertEquals(3, selection.malformedPatterns());
        assertTrue(selection.enables(REQUESTS, DEMO), "\"re*q\" is the prefix \"re\", decided before the wildcard round");
        assertFalse(selection.enables(QUEUE, DEMO), "\"*queue\" is \"*\" in the wildcard round");
        assertFalse(selection.enables(DEMO_DEBUG, DEMO), "\"de*g\" disables the tag \"debug\" as the prefix \"de\"");
    }

    @Test
    void bytesThatDoNotParseGiveTheDefaultAndACount() {
        byte[] garbage = {(byte) 0x8a, 0x07, (byte) 0xff, (byte) 0xff, (byte) 0xff};
        CategorySelection selection = CategorySelection.fromDataSourceConfig(garbage);
        assertEquals(1, selection.malformedPatterns());
        assertTrue(selection.enables(REQUESTS, DEMO));
        assertFalse(selection.enables(DEMO_DEBUG, DEMO));
        assertEquals(0, CategorySelection.fromDataSourceConfig(new byte[0]).malformedPatterns());
    }

    @Test
    void categoriesAreDeclaredAsPerfettosSdkAllows() {
        assertThrows(IllegalArgumentException.class, () -> new Category("a,b"));
        assertThrows(IllegalArgumentException.class, () -> new Category("a", "1", "2", "3", "4", "5"));
        assertThrows(IllegalArgumentException.class, () -> new Category("a", ""));
        assertThrows(IllegalArgumentException.class, () -> Category.group("a"));
        assertThrows(IllegalArgumentException.class, () -> Category.group("a,,b"));
        assertThrows(IllegalArgumentException.class, () -> Category.group("a,b,c,d,e"));
        Category group = Category.group("a,b,c,d");
        assertTrue(group.isGroup());
        assertEquals(List.of("a", "b", "c", "d"), group.groupMembers());
        assertEquals("a,b,c,d", group.name());
        assertEquals(List.of("x", "y"), new Category("a", "x", "y").tags());
    }
}
