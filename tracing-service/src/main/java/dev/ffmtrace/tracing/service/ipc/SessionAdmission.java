package dev.ffmtrace.tracing.service.ipc;

import dev.ffmtrace.tracing.service.Guardrails;
import dev.ffmtrace.tracing.service.SessionConfig;
import dev.ffmtrace.tracing.service.TracingSession;

/**
 * Which consumer may start a session now: Perfetto's limits on sessions at once, in all
 * and per uid, and ffmtrace's on the buffer memory of all sessions together
 * ({@link Guardrails}). A clone is a session, as in Perfetto, whose trace the daemon
 * holds. The check and the start are one step, so that two consumers cannot both take
 * the last place.
 */
final class SessionAdmission {
    private final Consumers consumers;
    private final PortCounters counters;
    private long lastSessionId;

    SessionAdmission(Consumers consumers, PortCounters counters) {
        this.consumers = consumers;
        this.counters = counters;
    }

    /** What runs once admitted, given the new session's id: why it failed after all, or null. */
    @FunctionalInterface
    interface Admitted {
        String start(long sessionId);
    }

    /**
     * Runs {@code admitted}, holding the admission, if {@code caller} may start a session of
     * {@code config} now; returns the refusal (Perfetto's error text, counted) or what
     * {@code admitted} returned.
     */
    synchronized String admit(RemoteConsumer caller, SessionConfig config, Admitted admitted) {
        String refusal = refusal(caller, config);
        if (refusal != null) {
            counters.refused();
            return refusal;
        }
        return admitted.start(++lastSessionId);
    }

    private String refusal(RemoteConsumer caller, SessionConfig config) {
        int sessions = 0;
        int sessionsOfUid = 0;
        long bufferBytes = 0;
        for (RemoteConsumer consumer : consumers.connected()) {
            TracingSession session = consumer.session();
            boolean running = session != null && !session.isClosed();
            long cloned = consumer.cloneBytes();
            if (!running && cloned == 0) {
                continue;
            }
            sessions++;
            sessionsOfUid += consumer.info.uid() == caller.info.uid() ? 1 : 0;
            bufferBytes += running ? memoryBytes(session.config()) : cloned;
        }
        if (sessionsOfUid >= Guardrails.MAX_SESSIONS_PER_UID) {
            return "Too many concurrent tracing sesions (" + sessionsOfUid + ") for uid " + caller.info.uid()
                    + " limit is " + Guardrails.MAX_SESSIONS_PER_UID;
        }
        if (sessions >= Guardrails.MAX_SESSIONS) {
            return "Too many concurrent tracing sesions (" + sessions + ")";
        }
        long asked = memoryBytes(config);
        if (bufferBytes + asked > Guardrails.MAX_TOTAL_BUFFER_BYTES) {
            return "Requested too large trace buffer (" + asked / 1024 + "kB  > "
                    + (Guardrails.MAX_TOTAL_BUFFER_BYTES - bufferBytes) / 1024 + " kB)";
        }
        return null;
    }

    /**
     * The memory a session may make the daemon hold: its buffers, and what its ProtoVMs may
     * count (their limits), which Perfetto adds to a buffer's memory use for its watchdog.
     */
    static long memoryBytes(SessionConfig config) {
        long buffers = config.buffers().stream().mapToLong(SessionConfig.Buffer::sizeBytes).sum();
        long vms = config.dataSources().stream().filter(SessionConfig.DataSource::hasProtoVm)
                .mapToLong(source -> source.protoVmMemoryLimitKb() * 1024).sum();
        return buffers + vms;
    }
}
