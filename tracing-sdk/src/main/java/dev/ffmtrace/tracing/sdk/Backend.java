package dev.ffmtrace.tracing.sdk;

/** Where a session that starts a data source instance runs. */
public enum Backend {
    /** A {@code TracingService} in this process, reached as any producer reaches it. */
    IN_PROCESS,
    /** The system's tracing service ({@code traced}, or {@code ffmtrace serve}) on its producer socket. */
    SYSTEM
}
