/**
 * Perfetto's IPC wire layer: IPCFrames behind a 4-byte little-endian length on a Unix
 * socket, file descriptors as SCM_RIGHTS, a host that exposes services by name and
 * dispatches method invocations by id, and a client that binds and invokes them. The
 * producer and consumer ports are built on it.
 */
module dev.ffmtrace.ipc {
    requires transitive dev.ffmtrace.memory;
    requires transitive dev.ffmtrace.protozero;
    requires dev.ffmtrace.perfetto.protos;

    exports dev.ffmtrace.ipc;
}
