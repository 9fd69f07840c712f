package dev.ffmtrace.cli;

/**
 * A command's failure that the user caused or can fix (a bad file, a refused write, a
 * limit of the system): its message is one line for stderr, and it carries the exit
 * status, {@link #USAGE} for a bad command line or input, {@link #FAILED} for the rest.
 */
final class CliFailure extends Exception {
    /** Bad arguments, config or input, as picocli's own usage errors. */
    static final int USAGE = 2;
    static final int FAILED = 1;

    private final int exitCode;

    CliFailure(String message, int exitCode) {
        super(message, null, false, false);
        this.exitCode = exitCode;
    }

    int exitCode() {
        return exitCode;
    }
}
