/** ProtoZero writers and decoders generated from the project's subset of Perfetto's .proto files. */
module dev.ffmtrace.perfetto.protos {
    requires transitive dev.ffmtrace.protozero;

    exports dev.ffmtrace.perfetto.protos;
}
