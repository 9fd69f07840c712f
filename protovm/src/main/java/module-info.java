/** ProtoVM: runs a producer's program on each packet a ring buffer overwrites, keeping a full state. */
module dev.ffmtrace.protovm {
    requires transitive dev.ffmtrace.protozero;

    exports dev.ffmtrace.protovm;
}
