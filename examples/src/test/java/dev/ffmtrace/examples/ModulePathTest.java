package dev.ffmtrace.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.lang.module.Configuration;
import java.lang.module.ModuleFinder;
import java.lang.module.ModuleReference;
import java.lang.module.ResolvedModule;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.spi.ToolProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The offline program of docs/library.md as an application builds it: compiled into a module of its
 * own that requires only {@code dev.ffmtrace.tracing.trackevent}, against exactly the
 * modules that one needs, and run in a JVM of its own on the module path with native
 * access for {@code dev.ffmtrace.memory} alone.
 */
class ModulePathTest {
    static final String TRACK_EVENT = "dev.ffmtrace.tracing.trackevent";

    @TempDir
    Path dir;

    /**
     * The entries of this JVM's module path that hold {@code root} and the modules it
     * requires, directly or not: what the module system itself resolves for that root.
     */
    static Map<String, Path> modulePathFor(String root) {
        String modulePath = System.getProperty("jdk.module.path");
        assertNotNull(modulePath, "the tests run on the module path");
        Map<String, Path> entries = new LinkedHashMap<>();
        for (String entry : modulePath.split(File.pathSeparator)) {
            if (entry.isEmpty()) {
                continue;
            }
            for (ModuleReference module : ModuleFinder.of(Path.of(entry)).findAll()) {
                entries.putIfAbsent(module.descriptor().name(), Path.of(entry));
            }
        }
        ModuleFinder libraries = ModuleFinder.of(entries.values().toArray(Path[]::new));
        Configuration resolved = Configuration.empty()
                .resolve(ModuleFinder.compose(ModuleFinder.ofSystem(), libraries), ModuleFinder.of(), Set.of(root));
        Map<String, Path> needed = new LinkedHashMap<>();
        for (ResolvedModule module : resolved.modules()) {
            if (entries.containsKey(module.name())) {
                needed.put(module.name(), entries.get(module.name()));
            }
        }
        return needed;
    }

    @Test
    void trackEventNeedsTheCoreAloneNoIpc() {
        assertEquals(Set.of(TRACK_EVENT, "dev.ffmtrace.tracing.core",
                        "dev.ffmtrace.perfetto.protos", "dev.ffmtrace.protozero", "dev.ffmtrace.memory"),
                new TreeSet<>(modulePathFor(TRACK_EVENT).keySet()));
    }

    @Test
    void theClientsNeedNoServiceAndTheBufferNoIpc() {
        assertEquals(Set.of("dev.ffmtrace.tracing.client", "dev.ffmtrace.tracing.core", "dev.ffmtrace.ipc",
                        "dev.ffmtrace.perfetto.protos", "dev.ffmtrace.protozero", "dev.ffmtrace.memory"),
                new TreeSet<>(modulePathFor("dev.ffmtrace.tracing.client").keySet()));
        // The buffer runs its data sources' ProtoVMs, as Perfetto's does: protovm, but no IPC.
        assertEquals(Set.of("dev.ffmtrace.tracing.buffer", "dev.ffmtrace.tracing.core", "dev.ffmtrace.protovm",
                        "dev.ffmtrace.perfetto.protos", "dev.ffmtrace.protozero", "dev.ffmtrace.memory"),
                new TreeSet<>(modulePathFor("dev.ffmtrace.tracing.buffer").keySet()));
    }

    @Test
    void theReadmesOfflineProgramCompilesAndRunsWithOnlyTheTrackEventModules() throws Exception {
        String modules = String.join(File.pathSeparator,
                modulePathFor(TRACK_EVENT).values().stream().map(Path::toString).toList());

        // The program as docs/library.md shows it, in a module that requires track-event alone.
        Path source = dir.resolve("src");
        Path program = source.resolve("dev/ffmtrace/examples/OfflineTrackEvent.java");
        Files.createDirectories(program.getParent());
        Files.writeString(program, DocsExamplesTest.docsExamples().get("OfflineTrackEvent"));
        Files.writeString(source.resolve("module-info.java"),
                "module dev.ffmtrace.examples {\n    requires " + TRACK_EVENT + ";\n}\n");
        Path classes = dir.resolve("classes");
        ToolProvider javac = ToolProvider.findFirst("javac").orElseThrow();
        ByteArrayOutputStream compilerOutput = new ByteArrayOutputStream();
        var messages = new java.io.PrintStream(compilerOutput, true, StandardCharsets.UTF_8);
        int compiled = javac.run(messages, messages, "-Xlint:all", "-Werror", "-d", classes.toString(),
                "--module-path", modules, source.resolve("module-info.java").toString(), program.toString());
        assertEquals(0, compiled, compilerOutput.toString(StandardCharsets.UTF_8));

        Path trace = dir.resolve("offline.pftrace");
        List<String> command = new ArrayList<>(Arrays.asList(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--module-path", classes + File.pathSeparator + modules,
                "--enable-native-access=dev.ffmtrace.memory",
                "-m", "dev.ffmtrace.examples/dev.ffmtrace.examples.OfflineTrackEvent", trace.toString()));
        Path stdout = dir.resolve("stdout");
        Path stderr = dir.resolve("stderr");
        Process child = new ProcessBuilder(command).redirectOutput(stdout.toFile()).redirectError(stderr.toFile()).start();
        if (!child.waitFor(60, TimeUnit.SECONDS)) {
            child.destroyForcibly();
            throw new AssertionError("the example did not finish in 60 s: " + command);
        }
        String errors = Files.readString(stderr);
        assertEquals(0, child.exitValue(), command + "\n" + errors);
        assertFalse(errors.contains("restricted method"), errors);
        assertEquals("", errors, "nothing on stderr (no warnings)");
        assertEquals("wrote " + trace + "\n", Files.readString(stdout));
        ExamplesTest.checkOfflineTrace(trace);
    }
}
