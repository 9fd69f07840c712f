package dev.ffmtrace.tracing.service;

/** A TraceConfig the service refuses to start a session from; the message names what is wrong. */
public final class InvalidConfigException extends Exception {
    /** @param message what is wrong, naming the offending buffer or data source */
    public InvalidConfigException(String message) {
        super(message);
    }
}
