package dev.ffmtrace.tracing.trackevent;

import dev.ffmtrace.perfetto.protos.DataSourceConfig;
import dev.ffmtrace.perfetto.protos.TrackEventConfig;
import dev.ffmtrace.protozero.RepeatedFieldIterator;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The categories one session records: its {@code TrackEventConfig}'s enabled and disabled
 * categories and tags, decided for a category exactly as Perfetto's SDK decides
 * (checked against the SDK itself by {@code scripts/category-oracle}).
 *
 * <p>A pattern is a name, a prefix ending in {@code '*'}, or {@code "*"} alone. For exact
 * names first, then prefixes, then {@code "*"}: an enabled category pattern enables; a
 * disabled one disables; a disabled tag disables (with neither tag list set, the tags
 * "slow" and "debug" are the disabled ones); an enabled tag enables. A category nothing
 * decides is enabled. A group is enabled if any member is, each member judged by its
 * declaration and, failing that, as a category without tags.
 *
 * <p>Patterns with a {@code '*'} before their end are not Perfetto's syntax; they are
 * decided as Perfetto's release builds decide them (a prefix up to the first
 * {@code '*'}, or only by the wildcard round if it comes first) and counted in
 * {@link #malformedPatterns()}.
 */
public final class CategorySelection {
    /** What a session with no {@code track_event_config} records: everything but "slow" and "debug". */
    public static final CategorySelection DEFAULT = new CategorySelection(List.of(), List.of(), List.of(), List.of(), 0);

    private static final String SLOW_TAG = "slow";
    private static final String DEBUG_TAG = "debug";

    /** Perfetto's three rounds, in order. */
    private enum Match { EXACT, PREFIX, WILDCARD }

    private final List<String> enabledCategories;
    private final List<String> disabledCategories;
    private final List<String> enabledTags;
    private final List<String> disabledTags;
    private final int malformedPatterns;

    private CategorySelection(List<String> enabledCategories, List<String> disabledCategories,
                              List<String> enabledTags, List<String> disabledTags, int malformedConfigs) {
        this.enabledCategories = List.copyOf(enabledCategories);
        this.disabledCategories = List.copyOf(disabledCategories);
        this.enabledTags = List.copyOf(enabledTags);
        this.disabledTags = List.copyOf(disabledTags);
        this.malformedPatterns = malformedConfigs + malformed(enabledCategories) + malformed(disabledCategories)
                + malformed(enabledTags) + malformed(disabledTags);
    }

    /** A selection from these four lists of patterns, as a {@code TrackEventConfig} would hold them. */
    public static CategorySelection of(List<String> enabledCategories, List<String> disabledCategories,
                                       List<String> enabledTags, List<String> disabledTags) {
        return new CategorySelection(enabledCategories, disabledCategories, enabledTags, disabledTags, 0);
    }

    /**
     * The selection of a data source instance's serialized {@code DataSourceConfig}: its
     * {@code track_event_config}, or {@link #DEFAULT} if it has none. Bytes that do not
     * parse give what parsed before the damage, and one more {@link #malformedPatterns()}.
     */
    public static CategorySelection fromDataSourceConfig(byte[] dataSourceConfig) {
        DataSourceConfig.Decoder config = new DataSourceConfig.Decoder();
        config.reset(MemorySegment.ofArray(dataSourceConfig));
        TrackEventConfig.Decoder trackEvent = new TrackEventConfig.Decoder();
        if (!config.trackEventConfig(trackEvent)) {
            return config.hasError() ? new CategorySelection(List.of(), List.of(), List.of(), List.of(), 1) : DEFAULT;
        }
        return new CategorySelection(strings(trackEvent.enabledCategories(new RepeatedFieldIterator())),
                strings(trackEvent.disabledCategories(new RepeatedFieldIterator())),
                strings(trackEvent.enabledTags(new RepeatedFieldIterator())),
                strings(trackEvent.disabledTags(new RepeatedFieldIterator())),
                config.hasError() || trackEvent.hasError() ? 1 : 0);
    }

    private static List<String> strings(RepeatedFieldIterator fields) {
        List<String> strings = new ArrayList<>();
        while (fields.next()) {
            strings.add(fields.field().asString());
        }
        return strings;
    }

    private static int malformed(List<String> patterns) {
        int count = 0;
        for (String pattern : patterns) {
            int star = pattern.indexOf('*');
            if (star >= 0 && star != pattern.length() - 1) {
                count++;
            }
        }
        return count;
    }

    /** Patterns this selection holds that are not Perfetto's syntax, plus config bytes that did not parse. */
    public int malformedPatterns() {
        return malformedPatterns;
    }

    /**
     * Whether the session records events of {@code category}.
     *
     * @param declared the categories the application declared, by name: a group's
     *     members are looked up in it (a member not there counts as a category without tags)
     */
    public boolean enables(Category category, Map<String, Category> declared) {
        if (!category.isGroup()) {
            return enables(category.name(), category.tags());
        }
        for (String member : category.groupMembers()) {
            Category known = declared.get(member);
            // As Perfetto's SDK does, a declared member it disables is judged once more
            // without its tags, as a category it does not know.
            if (known != null && !known.isGroup() && enables(member, known.tags()) || enables(member, List.of())) {
                return true;
            }
        }
        return false;
    }

    private boolean enables(String name, List<String> tags) {
        for (Match match : Match.values()) {
            if (anyMatches(enabledCategories, name, match)) {
                return true;
            }
            if (anyMatches(disabledCategories, name, match)) {
                return false;
            }
            for (String tag : tags) {
                if (disabledTags.isEmpty()
                        ? enabledTags.isEmpty() && (matches(SLOW_TAG, tag, match) || matches(DEBUG_TAG, tag, match))
                        : anyMatches(disabledTags, tag, match)) {
                    return false;
                }
            }
            for (String tag : tags) {
                if (anyMatches(enabledTags, tag, match)) {
                    return true;
                }
            }
        }
        return true;
    }

    private static boolean anyMatches(List<String> patterns, String name, Match match) {
        for (String pattern : patterns) {
            if (matches(pattern, name, match)) {
                return true;
            }
        }
        return false;
    }

    /** Perfetto's rule: a name matches itself in every round, a prefix in the second, a leading '*' in the last. */
    private static boolean matches(String pattern, String name, Match match) {
        int star = pattern.indexOf('*');
        if (star < 0) {
            return name.equals(pattern);
        }
        if (star == 0) {
            return match == Match.WILDCARD;
        }
        return match == Match.PREFIX && name.startsWith(pattern.substring(0, star));
    }

    @Override
    public String toString() {
        return "enabled_categories " + enabledCategories + ", disabled_categories " + disabledCategories
                + ", enabled_tags " + enabledTags + ", disabled_tags " + disabledTags;
    }
}
