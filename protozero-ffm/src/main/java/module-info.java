/** ProtoZero: a zero-copy protobuf writer into MemorySegments, and bounded decoders. */
module dev.ffmtrace.protozero {
    requires transitive dev.ffmtrace.memory;

    exports dev.ffmtrace.protozero;
}
