package dev.ffmtrace.heapprofd.service;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.tracing.sdk.Tracing;
import dev.ffmtrace.tracing.sdk.TracingOptions;
import dev.ffmtrace.tracing.service.TracingService;
import java.time.Duration;

/** The SDK's in-process backend on a test's service, its data sources registered there; closing shuts the SDK down. */
final class InProcessTracing implements AutoCloseable {
    private InProcessTracing() {
    }

    static InProcessTracing on(TracingService service) throws InterruptedException {
        assertTrue(Tracing.initialize(TracingOptions.named("heapprofd-test").withInProcessBackend(service)));
        assertTrue(Tracing.awaitRegistrations(Duration.ofMinutes(1)), "the SDK's data sources reached the service");
        return new InProcessTracing();
    }

    @Override
    public void close() {
        Tracing.shutdown();
    }
}
