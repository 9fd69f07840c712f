package dev.ffmtrace.heapprofd.wire;

/** Bytes that are not a heapprofd record or client configuration; the message says what is wrong. */
public final class WireFormatException extends Exception {
    /** @param message what is wrong with the bytes */
    public WireFormatException(String message) {
        super(message);
    }
}
