package dev.ffmtrace.tracing.sdk;

import dev.ffmtrace.memory.StreamAddress;
import dev.ffmtrace.tracing.service.TracingService;
import java.util.Objects;

/**
 * How {@link Tracing} connects: to a tracing service in this process, to the system's, or
 * both, as one producer of each.
 *
 * @param producerName     the name the producer gives the services (Perfetto's SDK uses
 *                         the process name)
 * @param inProcessService a service in this process to be a producer of, or null
 * @param systemBackend    whether to be a producer of the system's service
 * @param systemSocket     its producer socket (a Unix socket, or a TCP endpoint on another
 *                         machine); null for Perfetto's rule
 *                         ({@code PERFETTO_PRODUCER_SOCK_NAME}, else
 *                         {@code /run/perfetto/traced-producer.sock})
 * @param smbSizeBytes     the shared memory buffer size to ask each service for (0: the
 *                         service's default)
 */
public record TracingOptions(String producerName, TracingService inProcessService, boolean systemBackend,
                             StreamAddress systemSocket, int smbSizeBytes) {
    public TracingOptions {
        Objects.requireNonNull(producerName, "producerName");
        if (smbSizeBytes < 0) {
            throw new IllegalArgumentException("smbSizeBytes cannot be negative: " + smbSizeBytes);
        }
    }

    /** A producer named {@code producerName} with no backend yet. */
    public static TracingOptions named(String producerName) {
        return new TracingOptions(producerName, null, false, null, 0);
    }

    /** Also a producer of {@code service}, in this process. */
    public TracingOptions withInProcessBackend(TracingService service) {
        return new TracingOptions(producerName, Objects.requireNonNull(service, "service"), systemBackend,
                systemSocket, smbSizeBytes);
    }

    /** Also a producer of the system's service, on its default producer socket. */
    public TracingOptions withSystemBackend() {
        return new TracingOptions(producerName, inProcessService, true, systemSocket, smbSizeBytes);
    }

    /** Also a producer of the system's service, on {@code socket}. */
    public TracingOptions withSystemBackend(StreamAddress socket) {
        return new TracingOptions(producerName, inProcessService, true, Objects.requireNonNull(socket, "socket"),
                smbSizeBytes);
    }

    /** The shared memory buffer size to ask for. */
    public TracingOptions withSmbSize(int bytes) {
        return new TracingOptions(producerName, inProcessService, systemBackend, systemSocket, bytes);
    }
}
