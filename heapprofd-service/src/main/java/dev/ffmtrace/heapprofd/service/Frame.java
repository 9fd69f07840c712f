package dev.ffmtrace.heapprofd.service;

import java.util.Objects;

/**
 * A frame of a booked stack: its name, as folded stacks show it and a heap profile names
 * its function, and the code it is in, as a heap profile's frames point into mappings.
 * Equal frames are one callsite node's key, so a frame holds values only.
 *
 * @param name the function, or {@code module+0xoffset} when the module has no symbol for it
 * @param module the mapping the pc is in; {@link Module#JAVA} for a Java frame,
 *        {@link Module#UNKNOWN} for a frame the service could not place
 * @param relPc the pc as the module's symbols address it (as a file offset without them)
 */
record Frame(String name, Module module, long relPc) {
    /**
     * A mapped module as a heap profile's Mapping describes it.
     *
     * @param path the mapped file's path, or the kernel's name for the mapping
     * @param buildId the GNU build id in hex, or null
     * @param start the mapping's first address
     * @param end the address past its end
     * @param offset the file offset it maps from
     * @param loadBias the difference between the addresses the file's symbols use and its file offsets there
     */
    record Module(String path, String buildId, long start, long end, long offset, long loadBias) {
        /** What Java frames are in: code with no mapping of its own. */
        static final Module JAVA = new Module("[java]", null, 0, 0, 0, 0);
        /** What a frame the service could not place is in (an undecodable stack, an unwinding error). */
        static final Module UNKNOWN = new Module("[unknown]", null, 0, 0, 0, 0);
    }

    /**
     * The name's hash (cached by the string) and the pc's: each booked frame is hashed once per
     * level of the callsite tree, and the record's own hash would also hash the module's six
     * fields. Equal frames have equal names and pcs, so equal hashes.
     */
    @Override
    public int hashCode() {
        return 31 * Objects.hashCode(name) + Long.hashCode(relPc);
    }

    /** A Java frame, named by the client. */
    static Frame java(String name) {
        return new Frame(name, Module.JAVA, 0);
    }

    /** A frame outside any module: an unknown stack or an unwinding error. */
    static Frame unknown(String name) {
        return new Frame(name, Module.UNKNOWN, 0);
    }
}
