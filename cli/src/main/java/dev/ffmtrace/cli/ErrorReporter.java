package dev.ffmtrace.cli;

import dev.ffmtrace.memory.NativeException;
import java.io.IOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileSystemException;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import picocli.CommandLine;
import picocli.CommandLine.IExecutionExceptionHandler;
import picocli.CommandLine.IParameterExceptionHandler;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.ParseResult;

/**
 * Every error of the command line as one line on stderr, {@code ffmtrace COMMAND: what},
 * and a non-zero exit: {@link CliFailure#USAGE} for a bad command line, the failure's own
 * status for a {@link CliFailure}, {@link CliFailure#FAILED} for anything else. No stack
 * trace: what the user can act on is the file, the call and the reason.
 */
final class ErrorReporter implements IExecutionExceptionHandler, IParameterExceptionHandler {
    @Override
    public int handleParseException(ParameterException e, String[] args) {
        CommandLine command = e.getCommandLine();
        command.getErr().println(prefix(command) + e.getMessage() + " (see " + command.getCommandSpec().qualifiedName()
                + " --help)");
        return CliFailure.USAGE;
    }

    @Override
    public int handleExecutionException(Exception e, CommandLine command, ParseResult parseResult) {
        command.getErr().println(prefix(command) + describe(e));
        return e instanceof CliFailure failure ? failure.exitCode() : CliFailure.FAILED;
    }

    private static String prefix(CommandLine command) {
        return command.getCommandSpec().qualifiedName() + ": ";
    }

    /** One line saying what went wrong: the file and the reason for a file system error. */
    static String describe(Throwable e) {
        return switch (e) {
            case CliFailure failure -> failure.getMessage();
            case FileSystemException fileError when fileError.getFile() != null -> fileError.getFile() + ": " + reason(fileError);
            case IOException io -> reason(io);
            case NativeException nativeCall -> nativeCall.getMessage();
            default -> e.getClass().getName() + (e.getMessage() != null ? ": " + e.getMessage() : "");
        };
    }

    /** Why an I/O operation failed, without the file's name. */
    static String reason(IOException e) {
        return switch (e) {
            case NoSuchFileException missing -> "no such file or directory";
            case AccessDeniedException denied -> "permission denied";
            case NotDirectoryException notDirectory -> "not a directory";
            case FileSystemException other -> other.getReason() != null ? other.getReason() : other.getClass().getSimpleName();
            default -> e.getMessage() != null ? e.getMessage() : e.getClass().getSimpleName();
        };
    }
}
