package dev.ffmtrace.heapprofd.service;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The ELF files a client's frames are in, for naming the frames when a profile is dumped
 * rather than as they are unwound: a file's function table is then built on the dumper's
 * thread, after the first dump asks for it, not on the reader's while the client waits
 * for room in its ring (libjvm's 58,000 symbols take 10 ms to sort warm, 200 ms cold). The
 * unwinder adds, the dumps read; thread-safe. Bounded: a frame in a module past
 * {@value #MAX_MODULES} is named by the unwinder at once.
 */
final class FrameSymbols {
    static final int MAX_MODULES = 4096;

    private final Map<Frame.Module, ElfFile> files = new ConcurrentHashMap<>();

    /**
     * Whether frames of {@code module} may be named at the dump from {@code elf}: false
     * when the table is full, and the caller names them itself.
     */
    boolean add(Frame.Module module, ElfFile elf) {
        if (files.containsKey(module)) {
            return true;
        }
        if (files.size() >= MAX_MODULES) {
            return false;
        }
        files.put(module, elf);
        return true;
    }

    /** {@code frame} named by its module's function symbols if it has one there, else {@code frame} itself. */
    Frame named(Frame frame) {
        ElfFile elf = files.get(frame.module());
        return elf == null ? frame : namedBy(elf, frame);
    }

    /** {@code frame} named by {@code elf}'s function at its pc if there is one, else {@code frame} itself. */
    static Frame namedBy(ElfFile elf, Frame frame) {
        String function = elf.functionAt(frame.relPc());
        return function == null ? frame : new Frame(function, frame.module(), frame.relPc());
    }
}
