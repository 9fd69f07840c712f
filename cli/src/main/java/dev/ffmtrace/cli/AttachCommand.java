package dev.ffmtrace.cli;

import com.sun.tools.attach.AgentInitializationException;
import com.sun.tools.attach.AgentLoadException;
import com.sun.tools.attach.AttachNotSupportedException;
import com.sun.tools.attach.VirtualMachine;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Loads the ffmtrace agent ({@code jvm/target/ffmtrace-jvm-agent.jar}) into a running JVM
 * through the Attach API: the JVM joins the system's tracing service with the
 * {@code jvm} and {@code track_event} data sources, as {@code -javaagent} would have made
 * it at its start. The JVM must be one this user may attach to (the same user, a JDK with
 * the Attach API); a JDK 21+ target warns that an agent was loaded dynamically unless it
 * runs with {@code -XX:+EnableDynamicAgentLoading}.
 */
@Command(name = "jvm", mixinStandardHelpOptions = true,
        description = "Trace a running JVM: load the ffmtrace agent into it, so it joins the tracing service "
                + "with the jvm (JFR events) and track_event data sources.")
final class AttachCommand implements Callable<Integer> {
    /** The system property naming the agent jar, which {@code ./ffmtrace} sets. */
    static final String AGENT_PROPERTY = "ffmtrace.jvm-agent";

    @Option(names = "--pid", required = true, description = "The JVM's process id.")
    long pid;

    @Option(names = "--agent", paramLabel = "JAR", description = "The agent jar (default: the build's, "
            + "jvm/target/ffmtrace-jvm-agent.jar).")
    Path agent;

    @Option(names = "--producer-socket", paramLabel = "SOCKET", description = "The service's producer socket, "
            + "a path or @name (default: the target's PERFETTO_PRODUCER_SOCK_NAME, else Perfetto's).")
    String socket;

    @Option(names = "--name", description = "The producer's name (default: the JVM's main class or jar).")
    String name;

    @Option(names = "--wait-ms", description = "How long the attach waits for a session to start the jvm data "
            + "source in the JVM (default: 0, no wait).")
    long waitMillis;

    @Override
    public Integer call() throws CliFailure {
        Path jar = agent != null ? agent : Path.of(System.getProperty(AGENT_PROPERTY, "jvm/target/ffmtrace-jvm-agent.jar"));
        if (!Files.isRegularFile(jar)) {
            throw new CliFailure("no agent jar at " + jar + " (./ffmtrace builds it, or give --agent)", CliFailure.USAGE);
        }
        List<String> options = new ArrayList<>();
        if (name != null) {
            options.add("name=" + name);
        }
        if (socket != null) {
            options.add("socket=" + socket);
        }
        if (waitMillis > 0) {
            options.add("wait=" + waitMillis);
        }
        VirtualMachine vm;
        try {
            vm = VirtualMachine.attach(Long.toString(pid));
        } catch (AttachNotSupportedException | IOException e) {
            throw new CliFailure("cannot attach to process " + pid + ": " + e.getMessage(), CliFailure.USAGE);
        }
        try {
            vm.loadAgent(jar.toAbsolutePath().toString(), String.join(",", options));
        } catch (AgentLoadException | AgentInitializationException | IOException e) {
            throw new CliFailure("process " + pid + " did not load the agent: " + e.getMessage(), CliFailure.FAILED);
        } finally {
            try {
                vm.detach();
            } catch (IOException e) {
                // The agent is loaded; a failed detach only leaves the attach channel to the JVM.
            }
        }
        System.out.println("process " + pid + " traced: the agent joined the tracing service");
        return 0;
    }
}
