package dev.ffmtrace.cli;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/** The {@code ./ffmtrace} command line. */
@Command(name = "ffmtrace",
        mixinStandardHelpOptions = true,
        version = "ffmtrace 0.1.0",
        description = "Perfetto's tracing memory machinery on the Java FFM API.",
        subcommands = {RecordCommand.class, ServeCommand.class, RelayCommand.class, ProduceCommand.class, HeapprofdCommand.class, DemoCommand.class, ConvertCommand.class, JfrCommand.class, AttachCommand.class, DumpCommand.class, ProtoVmCommand.class, StressCommand.class, StressHostileCommand.class, CommandLine.HelpCommand.class})
public final class FfmtraceCommand implements Runnable {
    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(System.out);
    }

    /** The command line with its error handling: every error one line on stderr and a non-zero exit. */
    static CommandLine commandLine() {
        ErrorReporter errors = new ErrorReporter();
        return new CommandLine(new FfmtraceCommand()).setExecutionExceptionHandler(errors)
                .setParameterExceptionHandler(errors);
    }

    /** The command that runs this command line in another JVM, laid out as this one: the java launcher and its arguments. */
    static List<String> javaCommand() {
        String java = ProcessHandle.current().info().command()
                .orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        List<String> command = new ArrayList<>(List.of(java));
        Module cli = FfmtraceCommand.class.getModule();
        if (cli.isNamed()) {
            // Run as ./ffmtrace runs us: on the module path, native access for the one module that needs it.
            command.addAll(List.of("--enable-native-access=dev.ffmtrace.memory",
                    "--module-path", System.getProperty("jdk.module.path"),
                    "-m", cli.getName() + "/" + FfmtraceCommand.class.getName()));
        } else {
            command.addAll(List.of("--enable-native-access=ALL-UNNAMED",
                    "-cp", System.getProperty("java.class.path"), FfmtraceCommand.class.getName()));
        }
        return command;
    }

    public static void main(String[] args) {
        System.exit(commandLine().execute(args));
    }
}
