package dev.ffmtrace.jvm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.perfetto.protos.DataSourceConfig;
import dev.ffmtrace.protozero.HeapBuffered;
import java.util.List;
import jdk.jfr.Configuration;
import org.junit.jupiter.api.Test;

/** A session's {@code legacy_config}, in JFR's words, to the settings of its recording stream. */
class JvmConfigTest {
    @Test
    void noConfigIsJfrsDefaultConfigurationForTheMappedEventsAlone() throws Exception {
        JvmConfig config = JvmConfig.parse("");
        assertEquals(List.of(), config.refused());
        var defaults = Configuration.getConfiguration("default").getSettings();
        assertEquals(defaults.get("jdk.ThreadPark#threshold"), config.settings().get("jdk.ThreadPark#threshold"));
        assertEquals(defaults.get("jdk.ExecutionSample#period"), config.settings().get("jdk.ExecutionSample#period"));
        assertTrue(config.settings().keySet().stream()
                .allMatch(key -> JfrMapping.EVENT_TYPES.contains(key.substring(0, key.indexOf('#')))), "only mapped events");
        assertFalse(config.settings().containsKey("jdk.ClassLoad#enabled"));
    }

    @Test
    void aNamedConfigurationAndOverridesInJfrsOwnSyntax() throws Exception {
        JvmConfig config = JvmConfig.parse("settings=profile, jdk.ThreadPark#threshold=5 ms;jdk.ExecutionSample#period=7ms");
        var profile = Configuration.getConfiguration("profile").getSettings();
        assertEquals(profile.get("jdk.JavaMonitorEnter#threshold"), config.settings().get("jdk.JavaMonitorEnter#threshold"));
        assertEquals("7ms", config.settings().get("jdk.ExecutionSample#period"));
        assertEquals(List.of("ms"), config.refused(), "a value with a space splits: the rest is refused");
        assertEquals("5", config.settings().get("jdk.ThreadPark#threshold"));
    }

    @Test
    void whatIsNotUnderstoodIsRefusedAndTheRestApplies() {
        JvmConfig config = JvmConfig.parse("settings=no-such-configuration verbose #period=1ms =x jdk.ThreadSleep#threshold=0ms");
        assertEquals(List.of("verbose", "#period=1ms", "=x", "settings=no-such-configuration"), config.refused());
        assertEquals("0ms", config.settings().get("jdk.ThreadSleep#threshold"));
        assertTrue(config.settings().containsKey("jdk.GarbageCollection#enabled"), "the default configuration");
    }

    @Test
    void theStringIsTheDataSourceConfigsLegacyConfig() {
        HeapBuffered<DataSourceConfig> bytes = new HeapBuffered<>(DataSourceConfig.FACTORY);
        bytes.get().setName(JvmDataSource.NAME);
        bytes.get().setLegacyConfig("jdk.ThreadSleep#threshold=3ms");
        assertEquals("3ms", JvmConfig.fromDataSourceConfig(bytes.toByteArray()).settings()
                .get("jdk.ThreadSleep#threshold"));
        assertEquals(JvmConfig.parse("").settings(), JvmConfig.fromDataSourceConfig(new byte[] {(byte) 0x80})
                .settings(), "a config that does not decode is no config");
    }
}
