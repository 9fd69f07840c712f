package dev.ffmtrace.tracing.producer;

import dev.ffmtrace.memory.MemoryFile;
import dev.ffmtrace.tracing.smb.CommitTransport;

/**
 * A tracing service in this process, which takes a connection's commits as calls rather
 * than as CommitData messages over the socket (as Perfetto's in-process backend hands its
 * commits to the service it runs). Everything else, the commands and the data sources'
 * lifecycle, still goes over the socket, so a data source runs the same on either service.
 */
@FunctionalInterface
public interface LocalCommits {
    /**
     * The service's transport for the producer whose shared memory buffer is {@code smb}
     * (the file the service handed over, through this side's descriptor), or null if the
     * service has no such producer: the connection then commits over the socket.
     */
    CommitTransport transportFor(MemoryFile smb);
}
