package dev.ffmtrace.cli;

import dev.ffmtrace.ipc.IpcException;
import dev.ffmtrace.memory.FileDescriptorChannel;
import dev.ffmtrace.memory.NativeException;
import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.tracing.service.SessionConfig;
import dev.ffmtrace.tracing.service.TriggerConfig;
import dev.ffmtrace.tracing.consumer.ConsumerConnection;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * {@code record --service}: a session on another tracing service through its consumer
 * port, as Perfetto's command line runs one: EnableTracing, then wait until the service
 * disables tracing (the config's {@code duration_ms}), or on Ctrl-C flush and
 * DisableTracing; then ReadBuffers into the trace file, unless the service wrote the
 * file itself ({@code write_into_file}, with the file's descriptor sent along). A
 * CLONE_SNAPSHOT session's triggers are observed, and each becomes a clone
 * ({@link ServiceClones}).
 */
final class ServiceRecording {
    /** How long the service may take to answer a request; Perfetto's own timeouts are shorter. */
    private static final long REPLY_TIMEOUT_MS = 30_000;
    /** Beyond duration_ms, how long the service may take to disable tracing, as Perfetto's command line allows. */
    private static final long DISABLE_GRACE_MS = 60_000;
    private static final long POLL_MS = 50;

    private ServiceRecording() {
    }

    static int record(String socket, SessionConfig session, byte[] config, Path out)
            throws IOException, InterruptedException, CliFailure {
        try (TraceOutput output = TraceOutput.open(out, "--out");
             StopOnSignal signal = new StopOnSignal();
             ConsumerConnection consumer = connect(socket);
             ServiceClones clones = new ServiceClones(socket, out, REPLY_TIMEOUT_MS)) {
            boolean cloneSnapshot = session.triggerConfig().mode() == TriggerConfig.Mode.CLONE_SNAPSHOT;
            if (cloneSnapshot) {
                // Observed before the session exists, as Perfetto's command line does: no trigger is missed.
                consumer.observeCloneTriggers(clones::reported);
            }
            CompletableFuture<ConsumerConnection.TracingDisabled> disabled;
            try (FileDescriptorChannel file = session.writeIntoFile()
                    ? FileDescriptorChannel.openForWriting(output.writtenFile()) : null) {
                // The service gets its own copy of the descriptor with the request.
                disabled = consumer.enableTracing(config, file == null ? -1 : file.fd());
            }
            // A CLONE_SNAPSHOT session records until its trigger_timeout_ms.
            long duration = session.effectiveDurationMs() > 0 ? session.effectiveDurationMs()
                    : RecordCommand.DEFAULT_DURATION_MS;
            System.out.printf("recording on the service at %s, %d ms, into %s%n", socket, duration, out);
            if (cloneSnapshot) {
                System.out.printf("  each clone trigger writes a clone into %s.0, %s.1, ...%n", out, out);
            }
            long start = System.nanoTime();
            boolean asked = false;
            while (!disabled.isDone()) {
                boolean stop = signal.awaitStop(POLL_MS);
                long elapsedMs = (System.nanoTime() - start) / 1_000_000;
                if (!asked && stop) {
                    System.out.println("  stopping early on a signal: writing the trace so far");
                }
                if (!asked && (stop || (session.effectiveDurationMs() == 0 && elapsedMs >= duration))) {
                    // As Perfetto's command line on Ctrl-C: a last flush, then disable.
                    consumer.flush(0, REPLY_TIMEOUT_MS);
                    consumer.disableTracing(REPLY_TIMEOUT_MS);
                    asked = true;
                }
                if (elapsedMs > duration + DISABLE_GRACE_MS + session.effectiveDataSourceStopTimeoutMs()) {
                    throw new CliFailure("--service " + socket + ": tracing was not disabled in time", CliFailure.FAILED);
                }
            }
            ConsumerConnection.TracingDisabled end = disabled.get(0, TimeUnit.MILLISECONDS);
            if (!end.ok()) {
                throw new CliFailure("--service " + socket + ": " + end.error(), CliFailure.FAILED);
            }
            TraceStream stream = output.stream();
            if (!session.writeIntoFile()) {
                stream.write(consumer.readBuffers(REPLY_TIMEOUT_MS));
            }
            // The clones still queued are of this session: they are made before its buffers are freed.
            int status = clones.finish(REPLY_TIMEOUT_MS * 2);
            consumer.freeBuffers(REPLY_TIMEOUT_MS);
            output.commit();
            if (session.writeIntoFile()) {
                System.out.printf("the service wrote %,d bytes to %s%n", Files.size(out), out);
            } else {
                System.out.printf("wrote %,d packets, %,d bytes to %s%n", stream.packets(), stream.bytes(), out);
            }
            System.out.println("open " + out.toAbsolutePath() + " at https://ui.perfetto.dev (Open trace file)");
            return status;
        } catch (IpcException e) {
            throw new CliFailure("--service " + socket + ": " + e.getMessage(), CliFailure.FAILED);
        } catch (ExecutionException | TimeoutException e) {
            throw new IllegalStateException("the future was done", e);
        }
    }

    private static ConsumerConnection connect(String socket) throws CliFailure, InterruptedException {
        try {
            return ConsumerConnection.connect(UnixAddress.parse(socket), REPLY_TIMEOUT_MS);
        } catch (NativeException | IllegalArgumentException e) {
            throw new CliFailure("--service " + socket + ": cannot connect: " + e.getMessage(), CliFailure.FAILED);
        } catch (IpcException e) {
            throw new CliFailure("--service " + socket + ": " + e.getMessage(), CliFailure.FAILED);
        }
    }
}
