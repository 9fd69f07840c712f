package dev.ffmtrace.memory;

/** Whether {@code attach} demands that the file be sealed against shrinking and growing. */
public enum Seals {
    /**
     * The file must carry {@code F_SEAL_SHRINK} and {@code F_SEAL_GROW}: a peer can then
     * never truncate it under our mapping (which would raise SIGBUS). What memfds from
     * {@link MemoryFile#create} and Perfetto's in-tree Android builds carry.
     */
    REQUIRED,
    /**
     * Any file: e.g. Perfetto's C++ buffers on Linux, which are unlinked temporary files
     * that cannot be sealed. Only attach to those from a peer you trust not to shrink them.
     */
    NOT_REQUIRED
}
