package dev.ffmtrace.protovm;

/**
 * The outcome of applying a patch, as Perfetto's ProtoVM reports it. An ERROR (a field the
 * program expected is missing) may be handled by the program's abort levels; an ABORT ends
 * the patch at once, keeping whatever it changed so far.
 */
public enum Status {
    OK,
    ERROR,
    ABORT;

    static final int CODE_OK = 0;
    static final int CODE_ERROR = 1;
    static final int CODE_ABORT = 2;

    static Status of(int code) {
        return code == CODE_OK ? OK : code == CODE_ERROR ? ERROR : ABORT;
    }
}
