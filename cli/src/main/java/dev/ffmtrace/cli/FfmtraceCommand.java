package dev.ffmtrace.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/** The {@code ./ffmtrace} command line. */
@Command(name = "ffmtrace",
        mixinStandardHelpOptions = true,
        version = "ffmtrace 0.1.0",
        description = "Perfetto's tracing memory machinery on the Java FFM API.",
        subcommands = {RecordCommand.class, DemoCommand.class, ConvertCommand.class, DumpCommand.class, CommandLine.HelpCommand.class})
public final class FfmtraceCommand implements Runnable {
    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(System.out);
    }

    public static void main(String[] args) {
        System.exit(new CommandLine(new FfmtraceCommand()).execute(args));
    }
}
