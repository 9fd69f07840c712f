package dev.ffmtrace.jvm;

import java.io.IOException;

/** A JFR recording's bytes are not what its format says they must be; the message says where. */
final class MalformedRecordingException extends IOException {
    MalformedRecordingException(String message) {
        super(message);
    }
}
