/**
 * protobuf-java classes of the project's Perfetto .proto files, for the command line's
 * text format (the library modules use the ProtoZero classes instead).
 */
@SuppressWarnings({"requires-automatic", "requires-transitive-automatic"})
module dev.ffmtrace.perfetto.protos.java {
    requires transitive com.google.protobuf;

    exports perfetto.protos;
}
