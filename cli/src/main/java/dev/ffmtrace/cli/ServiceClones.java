package dev.ffmtrace.cli;

import dev.ffmtrace.ipc.IpcException;
import dev.ffmtrace.memory.NativeException;
import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.tracing.consumer.ConsumerConnection;
import dev.ffmtrace.tracing.consumer.ConsumerConnection.CloneTriggerHit;
import java.io.IOException;
import java.nio.file.Path;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * {@code record --service}'s clones of a CLONE_SNAPSHOT session, made as Perfetto's command
 * line makes them: each trigger the service reports is cloned through a consumer connection
 * of its own (CloneSession with the trigger, then ReadBuffers) into the next of
 * {@code OUT.0}, {@code OUT.1}, ..., one at a time on a thread of their own, so that the
 * recording's connection goes on meanwhile. A clone that cannot be made or written is a
 * line on stderr and status 1 for the command; the recording goes on.
 */
final class ServiceClones implements AutoCloseable {
    private final String socket;
    private final Path out;
    private final long replyTimeoutMs;
    private final ExecutorService snapshots = Executors.newSingleThreadExecutor(
            Thread.ofPlatform().name("snapshot").factory());
    private final AtomicInteger status = new AtomicInteger();
    /** Confined to the snapshot thread. */
    private int written;

    ServiceClones(String socket, Path out, long replyTimeoutMs) {
        this.socket = socket;
        this.out = out;
        this.replyTimeoutMs = replyTimeoutMs;
    }

    /** Queues the clone for {@code hit}; called on the recording connection's thread. */
    void reported(CloneTriggerHit hit) {
        try {
            snapshots.execute(() -> status.accumulateAndGet(write(hit, Path.of(out + "." + written++)), Math::max));
        } catch (RejectedExecutionException e) {
            // Reported after the recording ended: there is no session left to clone.
        }
    }

    private int write(CloneTriggerHit hit, Path path) {
        try (TraceOutput output = TraceOutput.open(path, "--out");
             ConsumerConnection consumer = ConsumerConnection.connect(UnixAddress.parse(socket), replyTimeoutMs)) {
            ConsumerConnection.Cloned cloned = consumer.cloneSession(hit, replyTimeoutMs);
            if (!cloned.success()) {
                throw new CliFailure("--service " + socket + ": the clone for trigger \"" + hit.triggerName()
                        + "\" failed: " + cloned.error(), CliFailure.FAILED);
            }
            output.stream().write(consumer.readBuffers(replyTimeoutMs));
            output.commit();
            System.out.printf("  clone for trigger \"%s\" of %s: %,d packets written to %s%n", hit.triggerName(),
                    hit.producerName(), output.stream().packets(), path);
            return 0;
        } catch (CliFailure e) {
            System.err.println("ffmtrace record: " + e.getMessage() + " (the recording goes on)");
        } catch (IOException | IpcException | NativeException | IllegalArgumentException e) {
            System.err.println("ffmtrace record: " + path + ": " + ErrorReporter.describe(e) + " (the recording goes on)");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return CliFailure.FAILED;
    }

    /**
     * Waits for the clones reported so far to be written, at most {@code timeoutMs}; returns
     * the status they left (1 if any failed or did not finish in time).
     */
    int finish(long timeoutMs) throws InterruptedException {
        snapshots.shutdown();
        if (!snapshots.awaitTermination(timeoutMs, TimeUnit.MILLISECONDS)) {
            System.err.println("ffmtrace record: the clones were not written within " + timeoutMs + " ms");
            return CliFailure.FAILED;
        }
        return status.get();
    }

    @Override
    public void close() {
        snapshots.shutdownNow();
    }
}
