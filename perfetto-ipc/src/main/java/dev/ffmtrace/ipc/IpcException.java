package dev.ffmtrace.ipc;

/** A request the peer refused or could not answer: unknown service, request error, lost connection. */
public final class IpcException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public IpcException(String message) {
        super(message);
    }
}
