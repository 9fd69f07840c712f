package dev.ffmtrace.cli;

import dev.ffmtrace.protovm.ProtoVm;
import dev.ffmtrace.protovm.Status;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

/**
 * Runs a ProtoVM program on patches, for people writing programs: the same output as the
 * reference runner over Perfetto's own VM (native/protovm-ref/protovm_ref.cc), so the two
 * can be compared line by line (the ABORT reasons aside: those name Perfetto's sources).
 */
@Command(name = "protovm", mixinStandardHelpOptions = true,
        description = {"Run a ProtoVM program (a binary VmProgram) on patches, in order, from a state.",
                "Prints 'init mem=N state=HEX', then per patch 'patch[I] FILE status=OK|ERROR|ABORT mem=N state=HEX'"
                        + " (an ABORT followed by its reason lines, each starting '  | '), then 'clone mem=N state=HEX'"
                        + " for a read-only clone."})
final class ProtoVmCommand implements Callable<Integer> {
    private static final HexFormat HEX = HexFormat.of();

    @Parameters(index = "0", paramLabel = "PROGRAM", description = "A binary VmProgram file.")
    Path program;

    @Parameters(index = "1", paramLabel = "LIMIT_BYTES", description = "The memory limit, in bytes.")
    long limit;

    @Parameters(index = "2", paramLabel = "STATE|-", description = "A binary initial state file, or - for none.")
    String state;

    @Parameters(index = "3..*", paramLabel = "PATCH", description = "Binary patch files, applied in order.")
    List<Path> patches = List.of();

    @Override
    public Integer call() throws CliFailure {
        if (limit < 0) {
            throw new CliFailure("LIMIT_BYTES must not be negative: " + limit, CliFailure.USAGE);
        }
        MemorySegment initial = state.equals("-") ? null : MemorySegment.ofArray(read(Path.of(state), "state"));
        ProtoVm vm = new ProtoVm(MemorySegment.ofArray(read(program, "program")), limit, initial);
        PrintStream out = System.out;
        out.println("init " + describe(vm));
        for (int i = 0; i < patches.size(); i++) {
            Status status = vm.applyPatch(MemorySegment.ofArray(read(patches.get(i), "patch")));
            out.println("patch[" + i + "] " + patches.get(i) + " status=" + status + " " + describe(vm));
            if (status == Status.ABORT) {
                vm.abortReason().forEach(line -> out.println("  | " + line));
            }
        }
        out.println("clone " + describe(vm.cloneReadOnly()));
        return 0;
    }

    private static byte[] read(Path file, String what) throws CliFailure {
        try {
            return Files.readAllBytes(file);
        } catch (IOException | OutOfMemoryError e) {
            throw new CliFailure("cannot read " + what + " " + file + ": " + e.getMessage(), CliFailure.FAILED);
        }
    }

    private static String describe(ProtoVm vm) {
        return "mem=" + vm.memoryUsageBytes() + " state=" + HEX.formatHex(vm.serializeState());
    }
}
