package dev.ffmtrace.tracing.service;

/**
 * The limits the service's ports put on their clients, so that no client, of any user,
 * can exhaust the daemon for the others (issue #27). Each refusal is Perfetto's error
 * reply where Perfetto has the limit, and is counted ({@link ProducerPort#refusals()},
 * {@code ConsumerPort.refusals()}). The "Guardrails" table of {@code docs/daemon.md} lists
 * them beside Perfetto's values.
 */
public final class Guardrails {
    /** Buffers one session may ask for: Perfetto's kMaxBuffersPerConsumer. */
    public static final int MAX_BUFFERS_PER_SESSION = 128;
    /**
     * The size of all buffers of a consumer port's sessions together, the one asked for
     * included, with the memory limits of their ProtoVMs (a VM's state lives in the daemon's
     * heap). Perfetto has no such total (its 128 MiB per session applies only with
     * {@code enable_extra_guardrails}); its watchdog counts VMs as buffer memory.
     */
    public static final long MAX_TOTAL_BUFFER_BYTES = 2L << 30;
    /** Sessions of a consumer port at once: Perfetto's kMaxConcurrentTracingSessions. */
    public static final int MAX_SESSIONS = 15;
    /** Sessions of one uid at once: Perfetto's kMaxConcurrentTracingSessionsPerUid. */
    public static final int MAX_SESSIONS_PER_UID = 5;
    /** Data sources one producer connection may register (Perfetto: no limit). */
    public static final int MAX_DATA_SOURCES_PER_PRODUCER = 1024;
    /**
     * The longest data source name a producer may register, in UTF-8 bytes (Perfetto: only
     * its 128 KiB IPC frame), so that every entry of a QueryServiceState reply fits a frame.
     */
    public static final int MAX_DATA_SOURCE_NAME_BYTES = 1024;
    /** Requests of one consumer connection queued and not started yet (Perfetto: no limit). */
    public static final int MAX_PENDING_REQUESTS = 256;

    /**
     * The longest a flush waits for producers, whatever {@code flush_timeout_ms} or a
     * Flush request says (Perfetto: no limit; its waits hold no thread). A waiting flush
     * holds a thread of its session's, never the service's timer ({@link OffTimerTask}); this
     * bounds how long a stop, and a close or shutdown behind it, waits for a silent producer.
     */
    public static final long MAX_FLUSH_TIMEOUT_MS = 60_000;
    /** The longest a stop waits for data sources, whatever {@code data_source_stop_timeout_ms} says (Perfetto: no limit). */
    public static final long MAX_DATA_SOURCE_STOP_TIMEOUT_MS = 60_000;

    private Guardrails() {
    }
}
