package dev.ffmtrace.heapprofd.service;

import dev.ffmtrace.heapprofd.wire.AllocMetadata;
import dev.ffmtrace.memory.Layouts;
import dev.ffmtrace.tracing.util.LongMap;

import java.lang.foreign.MemorySegment;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * Unwinds a native client's Malloc records (x86-64) from the record's rip, rbp and rsp, a
 * frame at a time, reading stack words from the record's stack copy or, beyond it, from
 * the process ({@link StackOverlayMemory}). A frame whose pc has call frame information in
 * its ELF file's {@code .eh_frame} ({@link CallFrameInfo}) is stepped by it: the CFA is rsp
 * or rbp plus an offset, the return address and a saved rbp are words below the CFA, and
 * the caller's rsp is the CFA; for a caller the row looked up is the call's, at its return
 * address minus one. Any other frame (no FDE, or CFI the unwinder does not follow, such as
 * a DWARF expression) is stepped by its frame pointer: the caller's rbp and the return
 * address are the two words at rbp. The walk ends at a null return address, at a return
 * address the CFI marks undefined (the stack's start), and at a CFA or frame pointer that
 * is unaligned, not above the last CFA or outside the stack's mapping: the mark of a
 * caller built without frame pointers or CFI, or of the stack's start.
 * Each pc is found in the process's mappings (its {@code /proc/PID/maps}, read again when a
 * pc falls outside every known mapping, at most every 500 ms as Perfetto's unwinder does;
 * the read at the handshake does not count, so the first such pc reads them at once: a JVM
 * loads libjvm after its client connects, and allocates from it straight away; and for the
 * code that called the hook, at most once per {@value #STALE_MAPS_UNWINDS} unwinds)
 * and named by the mapped ELF file's symbols ({@link ElfFile}, read once per file for the
 * whole service ({@link ElfFiles}), and only if the file at the mapping's path is still
 * the one mapped, its inode the same) when a profile is dumped ({@link FrameSymbols}), or
 * {@code module+0xoffset} without one. The rule at each pc is kept, as the frame named
 * there is, so that a stack seen before costs no parsing, nor allocation.
 *
 * <p>The leaf frames of the client library itself (its malloc hooks) are dropped, as
 * Perfetto's unwinder skips its client's maps: they are in every stack and are not the
 * program's. A walk that fails (a word it cannot read, a pc outside every mapping, more
 * than {@value #MAX_FRAMES} frames, registers of another architecture) keeps the frames
 * it found and gets an outermost frame {@code ERROR <reason>}, named as Perfetto names
 * unwindstack's errors; each is counted. One per connection, used by its thread only.
 */
final class Unwinder implements AutoCloseable {
    /** Perfetto's kMaxFrames. */
    static final int MAX_FRAMES = 500;
    /** Perfetto's kMapsReparseInterval. */
    static final long MAPS_REPARSE_INTERVAL_NANOS = 500_000_000L;
    /** The fewest unwinds between two readings of the maps for a caller of the hook outside every mapping. */
    static final int STALE_MAPS_UNWINDS = 64;
    /** The base names of the client libraries whose leaf frames are dropped. */
    static final Set<String> CLIENT_LIBRARIES = Set.of("libffmtrace_heapprofd.so");
    private static final int MAX_ELF_FILES = 4096;
    private static final int MAX_PCS_KNOWN = 1 << 16;
    // unwindstack's x86-64 register order: rax rdx rcx rbx rsi rdi rbp rsp r8..r15 rip.
    private static final long RBP_OFFSET = 6 * 8;
    private static final long RSP_OFFSET = 7 * 8;
    private static final long RIP_OFFSET = 16 * 8;

    /** Why a walk failed, as Perfetto's StringifyLibUnwindstackError names unwindstack's errors. */
    enum Error {
        MEMORY_INVALID, INVALID_MAP, MAX_FRAME_EXCEEDED, BAD_ARCH;

        /** The outermost frame of a walk that failed so. */
        final Frame frame = Frame.unknown("ERROR " + name());
    }

    private record FileKey(String path, long inode) {
    }

    /**
     * What the unwinder learned at one pc (the innermost pc, or a return address less one):
     * the CFI rule there, and the frame it names once a stack through it is booked. One
     * lookup per frame finds both.
     */
    private static final class KnownPc {
        /** The mapping the pc was found in: while the maps are not read again, it holds the pc. */
        final Mappings.Mapping mapping;
        /** Null: the frame is stepped by its frame pointer. */
        final CfaRule rule;
        Frame frame;

        KnownPc(Mappings.Mapping mapping, CfaRule rule) {
            this.mapping = mapping;
            this.rule = rule;
        }
    }

    private final Supplier<byte[]> maps;
    private final StackOverlayMemory memory;
    private final LongSupplier nanoTime;
    private final ElfFiles sharedElfFiles;
    /** Where the dump finds the names of the frames in files. */
    private final FrameSymbols symbols;
    /** This process's files as {@code sharedElfFiles} gave them: a stat of each file once, not once per pc. */
    private final Map<FileKey, Optional<ElfFile>> elfFiles = new HashMap<>();
    private final LongMap<KnownPc> knownPcs = new LongMap<>();
    /** The walk's pcs, each the innermost pc or a return address less one, and what is known there. */
    private final long[] pcs = new long[MAX_FRAMES];
    private final KnownPc[] walked = new KnownPc[MAX_FRAMES];
    private final Mappings.Mapping[] pcMappings = new Mappings.Mapping[MAX_FRAMES];
    /** The last unwind's frames: the walk's, and an error frame. */
    private final FrameBuffer frames = new FrameBuffer(MAX_FRAMES + 1);
    private Mappings mappings;
    /** The unwinds counted when the maps were last read again for a pc the client's frames led to. */
    private long stacksAtStaleMapsRead = -STALE_MAPS_UNWINDS;
    /** When the maps were last read again; meaningless until {@code mapsReread}. */
    private long lastMapsReread;
    private boolean mapsReread;
    private long stacks;
    private long mapsReads;
    private final long[] errors = new long[Error.values().length];

    /**
     * @param maps reads the process's {@code /proc/PID/maps} again; null or empty when it cannot
     * @param memFd the process's {@code /proc/PID/mem} fd, or -1
     * @param nanoTime the clock of the rate limit on reading the maps again
     * @param elfFiles the ELF files the service has read
     * @param symbols where the frames in files are named, at the dump
     */
    Unwinder(Supplier<byte[]> maps, int memFd, LongSupplier nanoTime, ElfFiles elfFiles, FrameSymbols symbols) {
        this.maps = maps;
        this.sharedElfFiles = elfFiles;
        this.symbols = symbols;
        this.memory = new StackOverlayMemory(memFd);
        this.nanoTime = nanoTime;
        this.mappings = Mappings.EMPTY;
        readMaps();
    }

    /**
     * The frames of a native Malloc record, innermost first, valid until the next unwind;
     * the record's copy of the memory at its stack pointer is the {@code stackSize} bytes
     * of {@code stack} at {@code stackOffset}.
     */
    List<Frame> unwind(AllocMetadata alloc, MemorySegment stack, long stackOffset, long stackSize) {
        stacks++;
        frames.clear();
        if (alloc.arch() != AllocMetadata.ARCH_X86_64) {
            return failed(Error.BAD_ARCH);
        }
        MemorySegment registers = alloc.registers();
        long fp = registers.get(Layouts.LONG_UNALIGNED, RBP_OFFSET);
        long sp = registers.get(Layouts.LONG_UNALIGNED, RSP_OFFSET);
        long pc = registers.get(Layouts.LONG_UNALIGNED, RIP_OFFSET);
        memory.reset(alloc.stackPointer(), stack, stackOffset, stackSize);

        Mappings.Mapping stackMapping = mappings.find(sp);
        long stackEnd = stackMapping != null ? stackMapping.end() : alloc.stackPointer() + stackSize;
        // The CFA of the last frame stepped: the next must be above it.
        long lowest = sp;
        int count = 0;
        // The client's frames at the walk's start: rip is in them, and each of their return
        // addresses comes from frames the client built, up to the code that called the hook.
        int clientFrames = 0;
        Error error = null;
        while (true) {
            boolean fromClient = clientFrames == count;
            // A caller's pc is a return address, past its call and perhaps past its function (a call
            // to a function that does not return): the call's row, and its line, are the byte before it.
            long at = count == 0 ? pc : pc - 1;
            // A pc seen before skips the search of the maps (a JVM has hundreds of mappings).
            KnownPc known = knownPcs.get(at);
            Mappings.Mapping mapping = known != null && known.mapping.holds(pc)
                    ? known.mapping : executableMapping(pc, fromClient);
            if (mapping == null) {
                error = Error.INVALID_MAP;
                break;
            }
            if (known == null || known.mapping != mapping) {
                known = learn(at, mapping);
            }
            pcs[count] = at;
            pcMappings[count] = mapping;
            walked[count] = known;
            if (fromClient && CLIENT_LIBRARIES.contains(mapping.name())) {
                clientFrames++;
            }
            count++;
            CfaRule rule = known.rule;
            long cfa;
            if (rule != null) {
                if (rule.outermost()) {
                    break;
                }
                cfa = (rule.cfaRegister() == CfaInterpreter.DWARF_RSP ? sp : fp) + rule.cfaOffset();
                if ((cfa & 7) != 0 || Long.compareUnsigned(cfa, lowest) <= 0 || Long.compareUnsigned(cfa, stackEnd) > 0) {
                    break;
                }
            } else {
                if (fp == 0 || (fp & 7) != 0 || Long.compareUnsigned(fp, lowest) < 0
                        || Long.compareUnsigned(fp, stackEnd - 16) > 0) {
                    break;
                }
                cfa = fp + 16;
            }
            if (count == MAX_FRAMES) {
                error = Error.MAX_FRAME_EXCEEDED;
                break;
            }
            // The return address and the caller's rbp: at the CFA's rule's slots, or the two words at rbp.
            if (!memory.readWord(rule != null ? cfa + rule.returnAddressOffset() : fp + 8)) {
                error = Error.MEMORY_INVALID;
                break;
            }
            pc = memory.value();
            if (rule == null || rule.rbpRule() == CfaRule.RBP_SAVED) {
                if (!memory.readWord(rule != null ? cfa + rule.rbpOffset() : fp)) {
                    error = Error.MEMORY_INVALID;
                    break;
                }
                fp = memory.value();
            } else if (rule.rbpRule() == CfaRule.RBP_VALUE) {
                fp = cfa + rule.rbpOffset();
            } else if (rule.rbpRule() == CfaRule.RBP_UNDEFINED) {
                fp = 0;
            }
            sp = cfa;
            lowest = cfa;
            if (pc == 0) {
                break;
            }
        }

        for (int i = clientFrames; i < count; i++) {
            KnownPc known = walked[i];
            if (known.frame == null) {
                known.frame = symbolize(pcs[i], pcMappings[i]);
            }
            frames.add(known.frame);
        }
        return error == null ? frames : failed(error);
    }

    private List<Frame> failed(Error error) {
        errors[error.ordinal()]++;
        frames.add(error.frame);
        return frames;
    }

    /**
     * The executable mapping that holds {@code pc}, reading the maps again if none does and a
     * rate limit allows: at most every 500 ms, or, for a pc the client's own frames lead to
     * ({@code fromClient}: code that ran, so the maps are stale, a library loaded since, and
     * not the walk wrong), at most once per {@value #STALE_MAPS_UNWINDS} unwinds. Without
     * the second, a JVM's allocations from libjvm, loaded while a read spent on a wrong
     * return address held the limit, would all fail the first 500 ms.
     */
    private Mappings.Mapping executableMapping(long pc, boolean fromClient) {
        Mappings.Mapping mapping = mappings.find(pc);
        // A mapping that was not executable when the maps were read may be now: a JIT's code
        // cache is reserved without access and made executable piece by piece as it fills.
        if (mapping == null || !mapping.executable()) {
            long now = nanoTime.getAsLong();
            boolean due = !mapsReread || now - lastMapsReread >= MAPS_REPARSE_INTERVAL_NANOS;
            boolean stale = fromClient && stacks - stacksAtStaleMapsRead >= STALE_MAPS_UNWINDS;
            if (due || stale) {
                if (stale) {
                    stacksAtStaleMapsRead = stacks;
                }
                mapsReread = true;
                lastMapsReread = now;
                readMaps();
                mapping = mappings.find(pc);
            }
        }
        return mapping != null && mapping.executable() ? mapping : null;
    }

    private void readMaps() {
        mapsReads++;
        byte[] text = maps.get();
        if (text != null && text.length > 0) {
            mappings = Mappings.parse(text);
            // A pc may now be another file's.
            knownPcs.clear();
        }
    }

    /** What is known at {@code pc} in {@code mapping}, learned now: its CFI rule looked up. */
    private KnownPc learn(long pc, Mappings.Mapping mapping) {
        if (knownPcs.size() == MAX_PCS_KNOWN) {
            knownPcs.clear();
        }
        KnownPc known = new KnownPc(mapping, rule(pc, mapping));
        knownPcs.put(pc, known);
        return known;
    }

    /**
     * The rule of the CFI row at {@code pc} in {@code mapping}'s ELF file; null if there is
     * none the unwinder follows.
     */
    private CfaRule rule(long pc, Mappings.Mapping mapping) {
        ElfFile elf = mapping.isFile() ? elfFile(mapping) : null;
        CallFrameInfo cfi = elf == null ? null : elf.callFrameInfo();
        long vaddr = cfi == null ? -1 : elf.vaddrOf(pc - mapping.start() + mapping.offset());
        return vaddr == -1 ? null : cfi.ruleAt(vaddr);
    }

    /**
     * The frame at {@code pc}, named {@code module+0xaddress}; a frame in an ELF file is
     * named by the file's symbols at the dump ({@link FrameSymbols}), or now if that table
     * is full.
     */
    private Frame symbolize(long pc, Mappings.Mapping mapping) {
        long fileOffset = pc - mapping.start() + mapping.offset();
        ElfFile elf = mapping.isFile() ? elfFile(mapping) : null;
        long vaddr = elf == null ? -1 : elf.vaddrOf(fileOffset);
        if (vaddr == -1) {
            return new Frame(mapping.name() + "+0x" + Long.toHexString(fileOffset), module(mapping, null, 0), fileOffset);
        }
        // The bias of the segment this mapping loads: its file offsets to the addresses the symbols use.
        long mappedVaddr = elf.vaddrOf(mapping.offset());
        Frame.Module module = module(mapping, elf.buildId(), mappedVaddr == -1 ? 0 : mappedVaddr - mapping.offset());
        Frame frame = new Frame(mapping.name() + "+0x" + Long.toHexString(vaddr), module, vaddr);
        return symbols.add(module, elf) ? frame : FrameSymbols.namedBy(elf, frame);
    }

    private static Frame.Module module(Mappings.Mapping mapping, String buildId, long loadBias) {
        return new Frame.Module(mapping.path(), buildId, mapping.start(), mapping.end(), mapping.offset(), loadBias);
    }

    /** The mapping's file as the service's {@link ElfFiles} has it, asked once per file for this process. */
    private ElfFile elfFile(Mappings.Mapping mapping) {
        FileKey key = new FileKey(mapping.path(), mapping.inode());
        Optional<ElfFile> elf = elfFiles.get(key);
        if (elf == null) {
            elf = Optional.ofNullable(sharedElfFiles.get(mapping.path(), mapping.inode()));
            if (elfFiles.size() == MAX_ELF_FILES) {
                elfFiles.clear();
            }
            elfFiles.put(key, elf);
        }
        return elf.orElse(null);
    }

    /** Where the frames it finds in files get their names. */
    FrameSymbols symbols() {
        return symbols;
    }

    /** Stacks unwound. */
    long stacks() {
        return stacks;
    }

    /** Walks that failed, for {@code error}. */
    long errors(Error error) {
        return errors[error.ordinal()];
    }

    /** Walks that failed, for any reason. */
    long errors() {
        long total = 0;
        for (long count : errors) {
            total += count;
        }
        return total;
    }

    /** Times the maps were read, the first included. */
    long mapsReads() {
        return mapsReads;
    }

    /** Reads of the process's memory, a page each, for words beyond the stack copies. */
    long remoteReads() {
        return memory.remoteReads();
    }

    /** Words that could be read neither from a stack copy nor from the process. */
    long failedReads() {
        return memory.failedReads();
    }

    @Override
    public void close() {
        memory.close();
    }
}
