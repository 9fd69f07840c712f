package dev.ffmtrace.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.perfetto.protos.TraceConfig;
import dev.ffmtrace.protozero.HeapBuffered;
import dev.ffmtrace.tracing.service.ProducerPort;
import dev.ffmtrace.tracing.service.SessionConfig;
import dev.ffmtrace.tracing.service.TracingService;
import dev.ffmtrace.tracing.service.TracingSession;
import dev.ffmtrace.tracing.trackevent.TrackEventReader;
import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.Writer;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.jar.Attributes;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code ffmtrace jvm --pid}: a running JVM that knows nothing of tracing gets the agent
 * through the Attach API and shows its collections in a session of a service on a socket.
 * The agent jar here holds only the manifest; the JVM finds the classes on the class path
 * it was started with (the shaded jar is what {@code ./ffmtrace jvm} loads by default).
 */
class AttachCommandTest {
    @TempDir
    Path dir;

    @Test
    void aRunningJvmLoadsTheAgentAndIsTraced() throws Exception {
        UnixAddress socket = UnixAddress.abstractName("ffmtrace-attach-" + System.nanoTime());
        Path agent = manifestOnlyAgent();
        byte[] trace;
        Process target = startTarget();
        try (TracingService service = new TracingService();
             ProducerPort port = ProducerPort.listen(service, socket);
             BufferedReader out = new BufferedReader(new InputStreamReader(target.getInputStream(),
                     StandardCharsets.UTF_8));
             Writer in = target.outputWriter(StandardCharsets.UTF_8)) {
            assertEquals("ready", out.readLine());
            TracingSession session = service.startSession(config());
            ConvertAndDumpTest.Run run = ConvertAndDumpTest.run("jvm", "--pid", Long.toString(target.pid()),
                    "--agent", agent.toString(), "--producer-socket", socket.toString(), "--wait-ms", "30000");
            assertEquals(0, run.exit(), run.err());
            assertEquals("process " + target.pid() + " traced: the agent joined the tracing service\n", run.out());
            in.write("go\n");
            in.flush();
            assertEquals("done", out.readLine());
            session.stop();
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            session.writeTrace(bytes);
            trace = bytes.toByteArray();
            session.close();
            assertEquals(0, port.violations());
        } finally {
            target.getOutputStream().close();
            assertTrue(target.waitFor(60, TimeUnit.SECONDS));
        }
        TrackEventReader.Decoded decoded = TrackEventReader.read(MemorySegment.ofArray(trace));
        long collections = decoded.events().stream()
                .filter(e -> e.debugAnnotations().contains("cause=System.gc()"))
                .filter(e -> {
                    var track = decoded.tracks().get(e.trackUuid());
                    return track != null && decoded.tracks().get(track.parentUuid()).pid() == target.pid();
                })
                .count();
        assertEquals(AttachTarget.GCS, collections);
    }

    @Test
    void aProcessThatIsNoJvmIsRefusedInOneLine() throws Exception {
        Path agent = manifestOnlyAgent();
        Process sleeper = new ProcessBuilder("sleep", "60").start();
        try {
            ConvertAndDumpTest.Run run = ConvertAndDumpTest.run("jvm", "--pid", Long.toString(sleeper.pid()),
                    "--agent", agent.toString());
            assertEquals(2, run.exit());
            assertEquals(1, run.err().lines().count(), run.err());
            assertTrue(run.err().startsWith("ffmtrace jvm: cannot attach to process " + sleeper.pid() + ": "),
                    run.err());
        } finally {
            sleeper.destroy();
        }
        ConvertAndDumpTest.Run noJar = ConvertAndDumpTest.run("jvm", "--pid", "1", "--agent",
                dir.resolve("missing.jar").toString());
        assertEquals(2, noJar.exit());
        assertTrue(noJar.err().startsWith("ffmtrace jvm: no agent jar at "), noJar.err());
    }

    private Process startTarget() throws Exception {
        List<String> classPath = new ArrayList<>();
        for (String property : List.of("jdk.module.path", "java.class.path")) {
            String value = System.getProperty(property);
            if (value != null && !value.isEmpty()) {
                classPath.add(value);
            }
        }
        return new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-XX:+EnableDynamicAgentLoading", "--enable-native-access=ALL-UNNAMED",
                "-cp", String.join(File.pathSeparator, classPath), AttachTarget.class.getName())
                .redirectError(dir.resolve("target-stderr.txt").toFile()).start();
    }

    private Path manifestOnlyAgent() throws Exception {
        Path jar = dir.resolve("agent.jar");
        Manifest manifest = new Manifest();
        manifest.getMainAttributes().put(Attributes.Name.MANIFEST_VERSION, "1.0");
        manifest.getMainAttributes().putValue("Agent-Class", "dev.ffmtrace.jvm.JvmAgent");
        try (OutputStream file = Files.newOutputStream(jar); JarOutputStream out = new JarOutputStream(file, manifest)) {
            out.flush();
        }
        return jar;
    }

    private static SessionConfig config() throws Exception {
        HeapBuffered<TraceConfig> config = new HeapBuffered<>(TraceConfig.FACTORY);
        config.get().addBuffers().setSizeKb(8192);
        config.get().addDataSources().setConfig().setName("jvm");
        config.get().addDataSources().setConfig().setName("track_event");
        return SessionConfig.parse(config.toSegment());
    }
}
