package dev.ffmtrace.cli;

import java.io.BufferedOutputStream;
import java.io.IOException;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Where a command writes a trace, checked and opened before anything is recorded. A
 * regular file (or a new one) is written as a temporary file in the same directory and
 * renamed over it by {@link #commit()}, so an existing file stays whole until there is
 * a trace to replace it with, and is never left half written. Anything else (a FIFO, a
 * device such as {@code /dev/full}) is opened for writing at once, without truncation,
 * and {@linkplain #isStream() streamed} into: a FIFO's open waits for its reader.
 */
final class TraceOutput implements AutoCloseable {
    private final Path target;
    /** The temporary file renamed to the target, or null if the target is written directly. */
    private final Path temporary;
    private final TraceStream stream;
    private boolean committed;

    private TraceOutput(Path target, Path temporary, TraceStream stream) {
        this.target = target;
        this.temporary = temporary;
        this.stream = stream;
    }

    /**
     * Checks that {@code path} can take a trace and opens it.
     *
     * @param option the command line option naming the file, for the error message
     * @throws CliFailure if it is a directory, its directory is missing, or it cannot be written
     */
    static TraceOutput open(Path path, String option) throws CliFailure {
        String what = option + " " + path;
        if (Files.isDirectory(path)) {
            throw new CliFailure(what + ": is a directory", CliFailure.USAGE);
        }
        Path directory = path.toAbsolutePath().getParent();
        if (!Files.isDirectory(directory)) {
            throw new CliFailure(what + ": no such directory " + directory, CliFailure.USAGE);
        }
        try {
            // Through a symbolic link, the file it points at is the one to replace.
            Path target = Files.exists(path) ? path.toRealPath() : path.toAbsolutePath();
            if (Files.exists(target) && !Files.isRegularFile(target)) {
                FileChannel channel = FileChannel.open(target, StandardOpenOption.WRITE);
                return new TraceOutput(target, null,
                        new TraceStream(new BufferedOutputStream(Channels.newOutputStream(channel), 1 << 16), what));
            }
            if (Files.exists(target) && !Files.isWritable(target)) {
                throw new CliFailure(what + ": permission denied", CliFailure.USAGE);
            }
            Path temporary = target.resolveSibling("." + target.getFileName() + "." + ProcessHandle.current().pid()
                    + "." + Long.toHexString(ThreadLocalRandom.current().nextLong()) + ".tmp");
            return new TraceOutput(target, temporary, new TraceStream(
                    new BufferedOutputStream(Files.newOutputStream(temporary, StandardOpenOption.CREATE_NEW,
                            StandardOpenOption.WRITE), 1 << 16), what));
        } catch (IOException e) {
            throw new CliFailure(what + ": cannot write: " + ErrorReporter.reason(e), CliFailure.USAGE);
        }
    }

    /** Where the trace goes; it counts the packets written. */
    TraceStream stream() {
        return stream;
    }

    /**
     * The file the trace is written into until {@link #commit()}: the temporary file, or
     * the target written directly. A service writing the trace itself (write_into_file) gets it.
     */
    Path writtenFile() {
        return temporary != null ? temporary : target;
    }

    /** Whether the target is written directly (a FIFO, a device), not replaced by a finished file. */
    boolean isStream() {
        return temporary == null;
    }

    /** Finishes the trace: flushed and closed, and a regular file renamed over the target. */
    void commit() throws IOException {
        stream.close();
        if (temporary != null) {
            Files.move(temporary, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        }
        committed = true;
    }

    /** Without a {@link #commit()}, drops what was written: the target is as it was. */
    @Override
    public void close() {
        if (committed) {
            return;
        }
        try {
            stream.close();
        } catch (IOException e) {
            // Abandoned: what could not be written does not matter any more.
        }
        if (temporary != null) {
            try {
                Files.deleteIfExists(temporary);
            } catch (IOException e) {
                // Left behind as a hidden .tmp file, which the user may remove.
            }
        }
    }
}
