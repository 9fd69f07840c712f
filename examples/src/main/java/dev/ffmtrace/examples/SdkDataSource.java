package dev.ffmtrace.examples;

import dev.ffmtrace.tracing.buffer.OverwritePolicy;
import dev.ffmtrace.tracing.producer.DataSourceDescriptor;
import dev.ffmtrace.tracing.sdk.DataSource;
import dev.ffmtrace.tracing.sdk.DataSourceCallbacks;
import dev.ffmtrace.tracing.sdk.InstanceSetup;
import dev.ffmtrace.tracing.sdk.Tracing;
import dev.ffmtrace.tracing.sdk.TracingOptions;
import dev.ffmtrace.tracing.service.SessionConfig;
import dev.ffmtrace.tracing.service.TracingService;
import dev.ffmtrace.tracing.service.TracingSession;
import dev.ffmtrace.tracing.smb.BufferExhaustedPolicy;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/** The SDK: a data source written once, started by a session of a tracing service in this process. */
public final class SdkDataSource {
    /** Counted down once an instance has written its ticks. */
    static final CountDownLatch TICKED = new CountDownLatch(1);

    /** Each instance writes five ticks from a thread of its own when its session starts it. */
    static final DataSource<String> TICKS = DataSource.register(DataSourceDescriptor.named("example.ticks"),
            new DataSourceCallbacks<>() {
                @Override
                public String onSetup(InstanceSetup setup) {         // the instance's state, from its config
                    return "instance " + setup.instanceId();
                }

                @Override
                public void onStart(String instance) {
                    Thread.ofPlatform().start(() -> {
                        for (int i = 0; i < 5; i++) {
                            String tick = "tick " + i;
                            SdkDataSource.TICKS.trace(ctx ->          // into every started instance
                                    ctx.newTracePacket().setTrackEvent().setName(ctx.state() + ": " + tick));
                        }
                        TICKED.countDown();
                    });
                }
            }, BufferExhaustedPolicy.STALL);

    public static void main(String[] args) throws Exception {
        try (TracingService service = new TracingService()) {
            // .withSystemBackend() instead (or as well) joins traced or `ffmtrace serve`.
            Tracing.initialize(TracingOptions.named("sdk example").withInProcessBackend(service));
            try (TracingSession session = service.startSession(SessionConfig.builder()
                    .buffer(1024, OverwritePolicy.DISCARD).dataSource("example.ticks").build())) {
                if (!TICKED.await(10, TimeUnit.SECONDS)) {
                    throw new IllegalStateException("no instance of example.ticks started");
                }
                session.stop();                                         // the instance stops, its writers commit
                try (OutputStream out = Files.newOutputStream(Path.of(args[0]))) {
                    System.out.println("wrote " + session.writeTrace(out) + " bytes to " + args[0]);
                }
            } finally {
                Tracing.shutdown();
            }
        }
    }
}
