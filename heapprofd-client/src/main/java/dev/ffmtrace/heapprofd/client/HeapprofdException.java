package dev.ffmtrace.heapprofd.client;

/** The client could not connect to heapprofd, or the handshake failed; the message says why. */
public final class HeapprofdException extends Exception {
    /** @param message what went wrong */
    public HeapprofdException(String message) {
        super(message);
    }
}
