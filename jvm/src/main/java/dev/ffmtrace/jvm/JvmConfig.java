package dev.ffmtrace.jvm;

import dev.ffmtrace.perfetto.protos.DataSourceConfig;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import jdk.jfr.Configuration;

/**
 * What a session asks of the {@code jvm} data source, from its DataSourceConfig's
 * {@code legacy_config} (field 1000, Perfetto's free-form string for data sources without a
 * proto of their own), in JFR's own words, separated by spaces, commas or semicolons:
 *
 * <pre>
 * legacy_config: "settings=profile jdk.ThreadPark#threshold=5ms jdk.ExecutionSample#period=10ms"
 * </pre>
 *
 * {@code settings=NAME} picks JFR's predefined configuration ({@code default}, the
 * default, or {@code profile}); of it, only the events the mapping writes are enabled, so
 * a session costs no more than JFR's own configuration. {@code EVENT#SETTING=VALUE}
 * items then override one setting each, as {@code -XX:StartFlightRecording} takes them.
 * Anything else is refused: named in {@link #refused()}, otherwise ignored.
 *
 * @param settings JFR's settings for the session's recording stream
 * @param refused the items that were not understood
 */
record JvmConfig(Map<String, String> settings, List<String> refused) {
    static final String DEFAULT_CONFIGURATION = "default";

    static JvmConfig fromDataSourceConfig(byte[] config) {
        DataSourceConfig.Decoder decoder = new DataSourceConfig.Decoder();
        decoder.reset(MemorySegment.ofArray(config));
        return parse(decoder.hasError() ? "" : decoder.legacyConfig());
    }

    static JvmConfig parse(String text) {
        List<String> refused = new ArrayList<>();
        Map<String, String> overrides = new LinkedHashMap<>();
        String configurationName = DEFAULT_CONFIGURATION;
        for (String item : text == null ? new String[0] : text.split("[\\s,;]+")) {
            if (item.isEmpty()) {
                continue;
            }
            int equals = item.indexOf('=');
            if (equals <= 0) {
                refused.add(item);
            } else if (item.startsWith("settings=")) {
                configurationName = item.substring(equals + 1);
            } else if (item.indexOf('#') > 0 && item.indexOf('#') < equals) {
                overrides.put(item.substring(0, equals), item.substring(equals + 1));
            } else {
                refused.add(item);
            }
        }
        Configuration configuration;
        try {
            configuration = Configuration.getConfiguration(configurationName);
        } catch (Exception e) {
            refused.add("settings=" + configurationName);
            configuration = defaultConfiguration();
        }
        Map<String, String> settings = new LinkedHashMap<>();
        configuration.getSettings().forEach((key, value) -> {
            if (JfrMapping.EVENT_TYPES.contains(eventOf(key))) {
                settings.put(key, value);
            }
        });
        settings.putAll(overrides);
        return new JvmConfig(Map.copyOf(settings), List.copyOf(refused));
    }

    private static Configuration defaultConfiguration() {
        try {
            return Configuration.getConfiguration(DEFAULT_CONFIGURATION);
        } catch (Exception e) {
            throw new IllegalStateException("the JDK has no JFR configuration named " + DEFAULT_CONFIGURATION, e);
        }
    }

    private static String eventOf(String settingKey) {
        int hash = settingKey.indexOf('#');
        return hash < 0 ? settingKey : settingKey.substring(0, hash);
    }
}
