package dev.ffmtrace.protozero;

/** The outcome of decoding; anything but {@link #OK} means the input is malformed. */
public enum DecodeStatus {
    OK,
    /** A varint runs past the end of its message. */
    TRUNCATED_VARINT,
    /** A varint has more than 10 bytes. */
    VARINT_TOO_LONG,
    /** A fixed32/fixed64 value runs past the end of its message. */
    TRUNCATED_FIXED,
    /** A length-delimited field claims more bytes than its message has left. */
    LENGTH_PAST_END,
    /** A tag with field id 0, or one larger than 2^29 - 1. */
    INVALID_FIELD_ID,
    /** Wire type 3 or 4 (groups, which ProtoZero does not decode), 6 or 7. */
    INVALID_WIRE_TYPE
}
