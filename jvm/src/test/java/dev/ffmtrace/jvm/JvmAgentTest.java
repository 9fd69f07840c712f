package dev.ffmtrace.jvm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.perfetto.protos.TraceConfig;
import dev.ffmtrace.protozero.HeapBuffered;
import dev.ffmtrace.tracing.sdk.TrackEvent;
import dev.ffmtrace.tracing.service.ProducerPort;
import dev.ffmtrace.tracing.service.SessionConfig;
import dev.ffmtrace.tracing.service.TracingService;
import dev.ffmtrace.tracing.service.TracingSession;
import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.jar.Attributes;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A second JVM started with {@code -javaagent} and a program that writes no trace of its
 * own joins a "system" service (one on a socket, as {@code ffmtrace serve} is) and shows
 * its collections and its sleep in the session. The agent jar here holds only the
 * manifest; the classes come from this build's class and module paths (the shaded
 * {@code ffmtrace-jvm-agent.jar} is what {@code scripts/interop-jvm-agent} runs).
 */
class JvmAgentTest {
    @TempDir
    Path dir;

    @Test
    void anUnchangedProgramUnderTheAgentIsTracedBySessionsThatNameJvm() throws Exception {
        assertTraced(false);
    }

    /**
     * The program exits while the session runs: the data source keeps no thread that would
     * hold the JVM (JFR's own stream thread would), and the trace stays whole. Whether the
     * events JFR had not yet handed to the stream make it depends on which exit hook runs
     * first, the agent's or JFR's own (docs/jvm.md, "Limits"), so this checks no events.
     */
    @Test
    void aProgramThatExitsWhileTheSessionRunsIsNotKeptAlive() throws Exception {
        assertTraced(true);
    }

    private void assertTraced(boolean exitEarly) throws Exception {
        UnixAddress socket = UnixAddress.abstractName("ffmtrace-jvm-agent-" + System.nanoTime());
        byte[] trace;
        long pid;
        String stderrText;
        try (TracingService service = new TracingService();
             ProducerPort port = ProducerPort.listen(service, socket)) {
            TracingSession session = service.startSession(config());
            Process child = start(socket, exitEarly ? "exit" : "stay");
            pid = child.pid();
            CompletableFuture<String> worked = CompletableFuture.supplyAsync(() -> firstLine(child));
            String line = worked.get(60, TimeUnit.SECONDS);
            assertEquals("worked", line, () -> "the program under the agent: " + stderr(child));
            if (exitEarly) {
                assertTrue(child.waitFor(60, TimeUnit.SECONDS), "the program exits by itself while the session runs");
            }
            session.stop();
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            session.writeTrace(out);
            trace = out.toByteArray();
            session.close();
            if (!exitEarly) {
                try (OutputStream stdin = child.getOutputStream()) {
                    stdin.write("exit\n".getBytes(StandardCharsets.UTF_8));
                }
            }
            assertTrue(child.waitFor(60, TimeUnit.SECONDS), "the program ends once the session stopped");
            assertEquals(0, child.exitValue(), () -> stderr(child));
            stderrText = stderr(child);
            assertEquals(0, port.violations());
        }
        JvmTraceContent content = JvmTraceContent.decode(trace);
        assertEquals(0, content.events().undecodable());
        if (exitEarly) {
            return;
        }
        long collections = content.slices().stream()
                .filter(s -> s.depth() == 0 && s.annotations().contains("cause=System.gc()"))
                .filter(s -> content.track(s.trackUuid()).parentUuid() != 0
                        && content.track(content.track(s.trackUuid()).parentUuid()).pid() == pid)
                .count();
        assertEquals(AgentTarget.GCS, collections);
        List<JvmTraceContent.Slice> sleeps = content.slicesOn("main").stream()
                .filter(s -> s.name().equals("Thread sleep") && content.track(s.trackUuid()).pid() == pid).toList();
        assertEquals(1, sleeps.size(), sleeps::toString);
        assertTrue(sleeps.getFirst().durationNanos() >= AgentTarget.SLEEP_MILLIS * 1_000_000);
        assertTrue(content.heapBytesByLeaf().getOrDefault(AgentTarget.Allocated[].class.getName(), 0L) > 0,
                () -> "the program's allocations in the heap profile written at the end: " + content.heapBytesByLeaf()
                        + "; the program's stderr: " + stderrText);
    }

    private Process start(UnixAddress socket, String mode) throws IOException {
        Path agent = dir.resolve("agent.jar");
        Manifest manifest = new Manifest();
        manifest.getMainAttributes().put(Attributes.Name.MANIFEST_VERSION, "1.0");
        manifest.getMainAttributes().putValue("Premain-Class", JvmAgent.class.getName());
        try (OutputStream file = Files.newOutputStream(agent); JarOutputStream jar = new JarOutputStream(file, manifest)) {
            jar.flush();
        }
        List<String> classPath = new ArrayList<>();
        for (String property : List.of("jdk.module.path", "java.class.path")) {
            String value = System.getProperty(property);
            if (value != null && !value.isEmpty()) {
                classPath.add(value);
            }
        }
        ProcessBuilder builder = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-javaagent:" + agent, "--enable-native-access=ALL-UNNAMED",
                "-cp", String.join(java.io.File.pathSeparator, classPath), AgentTarget.class.getName(), mode)
                .redirectError(dir.resolve("stderr.txt").toFile());
        builder.environment().put("PERFETTO_PRODUCER_SOCK_NAME", socket.toString());
        return builder.start();
    }

    private static String firstLine(Process child) {
        try {
            return new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8)).readLine();
        } catch (IOException e) {
            return e.toString();
        }
    }

    private String stderr(Process child) {
        try {
            return Files.readString(dir.resolve("stderr.txt"));
        } catch (IOException e) {
            return e.toString();
        }
    }

    private static SessionConfig config() throws Exception {
        HeapBuffered<TraceConfig> config = new HeapBuffered<>(TraceConfig.FACTORY);
        config.get().addBuffers().setSizeKb(8192);
        // The stop waits for JFR to hand over its last chunk and for the heap profile: on a
        // loaded machine that takes longer than the default 5 s, and the session would read
        // the trace without them.
        config.get().setDataSourceStopTimeoutMs(60_000);
        var jvm = config.get().addDataSources().setConfig();
        jvm.setName(JvmDataSource.NAME);
        jvm.setLegacyConfig("jdk.ThreadSleep#threshold=0ms");
        config.get().addDataSources().setConfig().setName(TrackEvent.DATA_SOURCE_NAME);
        return SessionConfig.parse(config.toSegment());
    }
}
