package dev.ffmtrace.heapprofd.service;

import dev.ffmtrace.heapprofd.wire.AllocMetadata;
import dev.ffmtrace.memory.Layouts;
import dev.ffmtrace.memory.Os;
import dev.ffmtrace.memory.testing.CPrograms;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The walk over synthetic stacks: the test program's functions mapped at a made-up
 * address, the client library's hook at the leaf, a stack of hand-made frames (the test
 * program has frame pointers, so its CFI and its frame pointers agree); a stack whose outer
 * frames are only in this process's memory; frames of the CFI test program, which has no
 * frame pointers.
 */
class UnwinderTest {
    private static final long PROGRAM = 0x5555_5550_0000L;
    private static final long CLIENT = 0x7f00_0000_0000L;
    private static final long STACK = 0x7ffd_0000_0000L;
    private static final long STACK_SIZE = 0x10000;
    private static final long SP = STACK + 0x8000;

    private static long a;
    private static long main;
    private static long inode;

    @BeforeAll
    static void findFunctions() throws Exception {
        for (String[] symbol : ElfFileTest.run("nm", "--defined-only", program())) {
            if (symbol.length == 3 && symbol[2].equals("a")) {
                a = Long.parseUnsignedLong(symbol[0], 16);
            } else if (symbol.length == 3 && symbol[2].equals("main")) {
                main = Long.parseUnsignedLong(symbol[0], 16);
            }
        }
        inode = (Long) Files.getAttribute(Path.of(program()), "unix:ino");
        // The mapping below maps the file from offset 0: its text is where its symbols say.
        ElfFile elf = ElfFile.read(program());
        assertEquals(a, elf.vaddrOf(a));
        assertEquals(main, elf.vaddrOf(main));
    }

    private static String program() {
        return CPrograms.program("heapprofd_pattern").toString();
    }

    private static byte[] maps(long programAt) {
        return maps(programAt, inode);
    }

    private static byte[] maps(long programAt, long programInode) {
        return String.format("""
                %x-%x r-xp 00000000 08:01 %d %s
                %x-%x r-xp 00000000 08:01 17 /opt/ffmtrace/libffmtrace_heapprofd.so
                %x-%x rw-p 00000000 00:00 0 [stack]
                """, programAt, programAt + 0x5000, programInode, program(), CLIENT, CLIENT + 0x1000, STACK,
                STACK + STACK_SIZE).getBytes(StandardCharsets.US_ASCII);
    }

    /** A stack copy from {@link #SP}, and the registers of the client's hook. */
    private static final class Frames {
        final MemorySegment copy = MemorySegment.ofArray(new byte[0x4000]);
        final AllocMetadata alloc = new AllocMetadata().arch(AllocMetadata.ARCH_X86_64).stackPointer(SP);

        Frames(long rip, long rbp) {
            alloc.registers().set(Layouts.LONG_UNALIGNED, 6 * 8, rbp);
            alloc.registers().set(Layouts.LONG_UNALIGNED, 7 * 8, SP + 16);
            alloc.registers().set(Layouts.LONG_UNALIGNED, 16 * 8, rip);
        }

        /** A frame at {@code fp}: the caller's frame pointer, then the return address. */
        Frames frame(long fp, long callerFp, long returnAddress) {
            copy.set(Layouts.LONG_UNALIGNED, fp - SP, callerFp);
            copy.set(Layouts.LONG_UNALIGNED, fp - SP + 8, returnAddress);
            return this;
        }

        MemorySegment copy(long bytes) {
            return copy.asSlice(0, bytes);
        }
    }

    /** The hook's frame, a()'s and main's; main's saved frame pointer is {@code mainsCallerFp}. */
    private static Frames hookAMain(long mainsCallerFp, long mainsReturn) {
        return new Frames(CLIENT + 0x123, SP + 0x40)
                .frame(SP + 0x40, SP + 0x100, PROGRAM + a + 0xe)
                .frame(SP + 0x100, SP + 0x200, PROGRAM + main + 0x20)
                .frame(SP + 0x200, mainsCallerFp, mainsReturn);
    }

    private static Unwinder unwinder(AtomicLong clock) {
        return new Unwinder(() -> maps(PROGRAM), -1, clock::get, new ElfFiles(), new FrameSymbols());
    }

    @Test
    void framesInFilesAreNamedWhenDumpedNotAsTheyAreUnwound() {
        try (Unwinder unwinder = unwinder(new AtomicLong())) {
            Frames frames = hookAMain(0, 0);
            List<Frame> found = unwinder.unwind(frames.alloc, frames.copy, 0, frames.copy.byteSize());
            assertTrue(found.stream().allMatch(frame -> frame.name().startsWith("heapprofd_pattern+0x")),
                    found::toString);
            assertEquals(List.of("a", "main"), names(unwinder, found));
        }
    }

    @Test
    void theWalkFollowsTheFramePointersAndDropsTheClientsHook() {
        try (Unwinder unwinder = unwinder(new AtomicLong())) {
            Frames frames = hookAMain(0, 0);
            assertEquals(List.of("a", "main"), unwind(unwinder, frames.alloc, frames.copy));
            assertEquals(1, unwinder.stacks());
            assertEquals(0, unwinder.errors());
            assertEquals(1, unwinder.mapsReads());
        }
    }

    @Test
    void aFramePointerThatCannotBeOneEndsTheWalkWithoutAnError() {
        try (Unwinder unwinder = unwinder(new AtomicLong())) {
            long[] ends = {SP + 0x1f8, SP + 0x203, STACK + STACK_SIZE, STACK - 0x1000};
            for (long end : ends) {
                // Below main's own frame, unaligned, past the stack's mapping, below it: main's
                // caller was built without frame pointers, or the stack starts there.
                Frames frames = hookAMain(end, PROGRAM + main + 0x40);
                List<String> stack = unwind(unwinder, frames.alloc, frames.copy);
                assertEquals(List.of("a", "main", "main"), stack, "fp 0x" + Long.toHexString(end));
            }
            assertEquals(0, unwinder.errors());
        }
    }

    @Test
    void aReturnAddressOutsideEveryMappingReadsTheMapsAgainAtOnceThenAtMostEvery500Ms() {
        AtomicLong clock = new AtomicLong();
        try (Unwinder unwinder = unwinder(clock)) {
            Frames frames = hookAMain(SP + 0x300, 0x1234);
            List<String> expected = List.of("a", "main", "ERROR INVALID_MAP");
            assertEquals(1, unwinder.mapsReads(), "read at the start");
            assertEquals(expected, unwind(unwinder, frames.alloc, frames.copy));
            assertEquals(2, unwinder.mapsReads(), "the first miss reads them again, however soon");
            clock.set(Unwinder.MAPS_REPARSE_INTERVAL_NANOS - 1);
            assertEquals(expected, unwind(unwinder, frames.alloc, frames.copy));
            assertEquals(2, unwinder.mapsReads(), "not again so soon");
            clock.set(Unwinder.MAPS_REPARSE_INTERVAL_NANOS);
            assertEquals(expected, unwind(unwinder, frames.alloc, frames.copy));
            assertEquals(3, unwinder.mapsReads());
            assertEquals(expected, unwind(unwinder, frames.alloc, frames.copy));
            assertEquals(3, unwinder.mapsReads());
            assertEquals(4, unwinder.errors(Unwinder.Error.INVALID_MAP));
            assertEquals(4, unwinder.errors());
        }
    }

    @Test
    void aLibraryMappedLaterIsFoundWhenTheMapsAreReadAgain() {
        AtomicLong clock = new AtomicLong();
        AtomicReference<byte[]> maps = new AtomicReference<>(maps(PROGRAM));
        try (Unwinder unwinder = new Unwinder(maps::get, -1, clock::get, new ElfFiles(), new FrameSymbols())) {
            long elsewhere = 0x6000_0000_0000L;
            Frames frames = hookAMain(SP + 0x300, elsewhere + a + 0xe).frame(SP + 0x300, 0, 0);
            assertEquals(List.of("a", "main", "ERROR INVALID_MAP"), unwind(unwinder, frames.alloc, frames.copy));
            // dlopen: the same file mapped a second time, higher up.
            maps.set((new String(maps(PROGRAM), StandardCharsets.US_ASCII)
                    + String.format("%x-%x r-xp 00000000 08:01 %d %s%n", elsewhere, elsewhere + 0x5000, inode, program()))
                    .getBytes(StandardCharsets.US_ASCII));
            clock.set(Unwinder.MAPS_REPARSE_INTERVAL_NANOS);
            assertEquals(List.of("a", "main", "a"), unwind(unwinder, frames.alloc, frames.copy));
            assertEquals(1, unwinder.errors());
        }
    }

    @Test
    void aLibraryMappedAfterTheHandshakeIsFoundByTheFirstPcInIt() {
        AtomicReference<byte[]> maps = new AtomicReference<>(maps(PROGRAM));
        try (Unwinder unwinder = new Unwinder(maps::get, -1, new AtomicLong()::get, new ElfFiles(), new FrameSymbols())) {
            long elsewhere = 0x6000_0000_0000L;
            Frames frames = hookAMain(SP + 0x300, elsewhere + a + 0xe).frame(SP + 0x300, 0, 0);
            // dlopen right after the handshake (a JVM's launcher loading libjvm), no time passing.
            maps.set((new String(maps(PROGRAM), StandardCharsets.US_ASCII)
                    + String.format("%x-%x r-xp 00000000 08:01 %d %s%n", elsewhere, elsewhere + 0x5000, inode, program()))
                    .getBytes(StandardCharsets.US_ASCII));
            assertEquals(List.of("a", "main", "a"), unwind(unwinder, frames.alloc, frames.copy));
            assertEquals(0, unwinder.errors());
        }
    }

    /**
     * A JIT's code cache is reserved without access and made executable as it fills: a pc
     * in a part that was not executable when the maps were read reads them again, as a pc
     * outside every mapping does.
     */
    @Test
    void aPcInAMappingThatWasNotExecutableWhenTheMapsWereReadReadsThemAgain() {
        long codeCache = 0x6000_0000_0000L;
        String reserved = String.format("%x-%x ---p 00000000 00:00 0%n", codeCache, codeCache + 0x10000);
        AtomicReference<byte[]> maps = new AtomicReference<>(
                (new String(maps(PROGRAM), StandardCharsets.US_ASCII) + reserved).getBytes(StandardCharsets.US_ASCII));
        try (Unwinder unwinder = new Unwinder(maps::get, -1, new AtomicLong()::get, new ElfFiles(), new FrameSymbols())) {
            Frames frames = hookAMain(SP + 0x300, codeCache + 0x40).frame(SP + 0x300, 0, 0);
            maps.set((new String(maps(PROGRAM), StandardCharsets.US_ASCII) + reserved.replace("---p", "rwxp"))
                    .getBytes(StandardCharsets.US_ASCII));
            // The call's byte, before its return address.
            assertEquals(List.of("a", "main", "[anon]+0x3f"), unwind(unwinder, frames.alloc, frames.copy));
            assertEquals(0, unwinder.errors());
            assertEquals(2, unwinder.mapsReads());
        }
    }

    /**
     * The code that called the hook is code that ran: outside every mapping, the maps are
     * stale, and they are read again whatever the clock says, at most once per
     * {@value Unwinder#STALE_MAPS_UNWINDS} unwinds (a client that lies costs that much).
     */
    @Test
    void aCallerOfTheHookOutsideEveryMappingReadsTheMapsAgainWhateverTheClock() {
        AtomicReference<byte[]> maps = new AtomicReference<>(maps(PROGRAM));
        try (Unwinder unwinder = new Unwinder(maps::get, -1, new AtomicLong()::get, new ElfFiles(), new FrameSymbols())) {
            // A wrong return address spends the 500 ms read.
            Frames wrong = hookAMain(SP + 0x300, 0x1234);
            assertEquals(List.of("a", "main", "ERROR INVALID_MAP"), unwind(unwinder, wrong.alloc, wrong.copy));
            assertEquals(2, unwinder.mapsReads());
            // Then a library is loaded (a JVM's libjvm) and calls malloc straight away.
            long elsewhere = 0x6000_0000_0000L;
            maps.set((new String(maps(PROGRAM), StandardCharsets.US_ASCII)
                    + String.format("%x-%x r-xp 00000000 08:01 %d %s%n", elsewhere, elsewhere + 0x5000, inode, program()))
                    .getBytes(StandardCharsets.US_ASCII));
            Frames fromLibrary = new Frames(CLIENT + 0x123, SP + 0x40).frame(SP + 0x40, SP + 0x100, elsewhere + a + 0xe)
                    .frame(SP + 0x100, 0, 0);
            assertEquals(List.of("a"), unwind(unwinder, fromLibrary.alloc, fromLibrary.copy));
            assertEquals(3, unwinder.mapsReads());
            // A caller in no mapping at all: read again only after the unwinds between reads.
            Frames nowhere = new Frames(CLIENT + 0x123, SP + 0x40).frame(SP + 0x40, 0, 0x7777_0000L);
            for (int i = 1; i < Unwinder.STALE_MAPS_UNWINDS; i++) {
                assertEquals(List.of("ERROR INVALID_MAP"), unwind(unwinder, nowhere.alloc, nowhere.copy));
                assertEquals(3, unwinder.mapsReads(), "unwind " + i);
            }
            assertEquals(List.of("ERROR INVALID_MAP"), unwind(unwinder, nowhere.alloc, nowhere.copy));
            assertEquals(4, unwinder.mapsReads());
        }
    }

    /**
     * The unwinder keeps the mapping of each pc it has seen rather than search the maps again,
     * and forgets it when it reads them again: a pc in a file mapped anew is that file's, and
     * the walk goes to the end of a stack mapped anew.
     */
    @Test
    void theMappingsKeptForPcsAreForgottenWhenTheMapsAreReadAgain() {
        String full = new String(maps(PROGRAM), StandardCharsets.US_ASCII);
        // A stack that ends below main's frame at SP + 0x200.
        String shortStack = full.replace(String.format("%x-%x rw-p", STACK, STACK + STACK_SIZE),
                String.format("%x-%x rw-p", STACK, SP + 0x180));
        AtomicReference<byte[]> maps = new AtomicReference<>(shortStack.getBytes(StandardCharsets.US_ASCII));
        try (Unwinder unwinder = new Unwinder(maps::get, -1, new AtomicLong()::get, new ElfFiles(), new FrameSymbols())) {
            Frames frames = hookAMain(0, PROGRAM + main + 0x40);
            assertEquals(List.of("a", "main"), unwind(unwinder, frames.alloc, frames.copy));
            assertEquals(List.of("a", "main"), unwind(unwinder, frames.alloc, frames.copy));
            // The whole stack, and another file mapped where the program was; a return address
            // in no mapping makes the unwinder read the maps again.
            maps.set(full.replace(program(), "/opt/other/libother.so").getBytes(StandardCharsets.US_ASCII));
            Frames wrong = new Frames(CLIENT + 0x123, SP + 0x40).frame(SP + 0x40, 0, 0x1234);
            assertEquals(List.of("ERROR INVALID_MAP"), unwind(unwinder, wrong.alloc, wrong.copy));
            assertEquals(2, unwinder.mapsReads());
            assertEquals(List.of("libother.so+" + hex(a + 0xd), "libother.so+" + hex(main + 0x1f),
                    "libother.so+" + hex(main + 0x3f)), unwind(unwinder, frames.alloc, frames.copy));
        }
    }

    private static String hex(long value) {
        return "0x" + Long.toHexString(value);
    }

    @Test
    void aPcWithoutASymbolIsItsModuleAndOffset() {
        try (Unwinder unwinder = unwinder(new AtomicLong())) {
            // Inside the program's mapping, in its ELF header: no function there.
            Frames frames = hookAMain(0, PROGRAM + 0x41);
            assertEquals(List.of("a", "main", "heapprofd_pattern+0x40"), unwind(unwinder, frames.alloc, frames.copy));
            // Inside the client library, past the leaf: it is no ELF file here, and not dropped.
            frames = hookAMain(0, CLIENT + 0x801);
            assertEquals(List.of("a", "main", "libffmtrace_heapprofd.so+0x800"),
                    unwind(unwinder, frames.alloc, frames.copy));
        }
    }

    @Test
    void aFileThatIsNoLongerTheOneMappedIsNotReadForSymbols() {
        // The maps name the program's path with another inode: the file was replaced since.
        try (Unwinder unwinder = new Unwinder(() -> maps(PROGRAM, inode + 1), -1, System::nanoTime, new ElfFiles(), new FrameSymbols())) {
            Frames frames = hookAMain(0, 0);
            assertEquals(List.of("heapprofd_pattern+0x" + Long.toHexString(a + 0xd),
                    "heapprofd_pattern+0x" + Long.toHexString(main + 0x1f)), unwind(unwinder, frames.alloc, frames.copy));
        }
    }

    @Test
    void aStackOfMoreThanMaxFramesEndsInAnError() {
        try (Unwinder unwinder = unwinder(new AtomicLong())) {
            Frames frames = new Frames(CLIENT + 0x123, SP + 0x40);
            for (int i = 0; i < 600; i++) {
                long fp = SP + 0x40 + 16L * i;
                frames.frame(fp, fp + 16, PROGRAM + a + 0xe);
            }
            List<String> stack = unwind(unwinder, frames.alloc, frames.copy);
            assertEquals(Unwinder.MAX_FRAMES, stack.size(), "the hook's frame dropped, the error added");
            assertEquals("ERROR MAX_FRAME_EXCEEDED", stack.getLast());
            assertEquals(1, unwinder.errors(Unwinder.Error.MAX_FRAME_EXCEEDED));
        }
    }

    @Test
    void wordsBeyondTheCopyWithoutTheProcesssMemoryAreAnError() {
        try (Unwinder unwinder = unwinder(new AtomicLong())) {
            Frames frames = hookAMain(0, 0);
            // The copy holds the hook's and a()'s frames; main's is beyond it.
            assertEquals(List.of("a", "ERROR MEMORY_INVALID"), unwind(unwinder, frames.alloc, frames.copy(0x100)));
            assertEquals(1, unwinder.errors(Unwinder.Error.MEMORY_INVALID));
            assertEquals(1, unwinder.failedReads());
        }
    }

    @Test
    void theStackIsReadInPlaceAndNotPastItsSize() {
        try (Unwinder unwinder = unwinder(new AtomicLong())) {
            Frames frames = hookAMain(0, 0);
            // The stack's 0x100 bytes at 0x40 of a record's copy; main's frame follows them
            // there, left from a longer record, and must not be read.
            MemorySegment record = MemorySegment.ofArray(new byte[0x40 + 0x4000]);
            record.asSlice(0x40).copyFrom(frames.copy);
            assertEquals(List.of("a", "ERROR MEMORY_INVALID"),
                    names(unwinder, unwinder.unwind(frames.alloc, record, 0x40, 0x100)));
            assertEquals(List.of("a", "main"),
                    names(unwinder, unwinder.unwind(frames.alloc, record, 0x40, 0x4000)));
        }
    }

    @Test
    void registersOfAnotherArchitectureAreAnError() {
        try (Unwinder unwinder = unwinder(new AtomicLong())) {
            Frames frames = hookAMain(0, 0);
            frames.alloc.arch(AllocMetadata.ARCH_ARM64);
            assertEquals(List.of("ERROR BAD_ARCH"), unwind(unwinder, frames.alloc, frames.copy));
            assertEquals(1, unwinder.errors(Unwinder.Error.BAD_ARCH));
        }
    }

    /**
     * A stack in this process's memory, of which the record carries only the first 64 bytes:
     * the words beyond them are read through /proc/self/mem, as the service reads a client's.
     * Each pc is a libc function's first byte, where its CFI puts the CFA 8 bytes above rsp
     * and the return address at rsp: each frame is the one word of its return address.
     */
    @Test
    void wordsBeyondTheCopyAreReadFromTheProcess() throws IOException {
        long getpid = Linker.nativeLinker().defaultLookup().find("getpid").orElseThrow().address();
        long getuid = Linker.nativeLinker().defaultLookup().find("getuid").orElseThrow().address();
        long getppid = Linker.nativeLinker().defaultLookup().find("getppid").orElseThrow().address();
        int memFd = Os.openReadOnly(Path.of("/proc/self/mem"));
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment stack = arena.allocate(0x2000, 16);
            long sp = stack.address();
            // A caller's return address points after its call: the row looked up, one byte before, is the entry's.
            stack.set(Layouts.LONG_UNALIGNED, 0x38, getuid + 1);
            stack.set(Layouts.LONG_UNALIGNED, 0x40, getppid + 1);
            stack.set(Layouts.LONG_UNALIGNED, 0x48, 0);
            AllocMetadata alloc = new AllocMetadata().arch(AllocMetadata.ARCH_X86_64).stackPointer(sp);
            alloc.registers().set(Layouts.LONG_UNALIGNED, 7 * 8, sp + 0x38);
            alloc.registers().set(Layouts.LONG_UNALIGNED, 16 * 8, getpid);
            MemorySegment copy = MemorySegment.ofArray(stack.asSlice(0, 0x40).toArray(Layouts.BYTE));

            byte[] maps = Files.readAllBytes(Path.of("/proc/self/maps"));
            try (Unwinder unwinder = new Unwinder(() -> maps, memFd, System::nanoTime, new ElfFiles(), new FrameSymbols())) {
                List<String> frames = unwind(unwinder, alloc, copy);
                assertEquals(3, frames.size(), frames.toString());
                assertTrue(frames.stream().noneMatch(frame -> frame.startsWith("ERROR")), frames.toString());
                assertEquals(1, unwinder.remoteReads(), "one page read, both words in it");
                assertEquals(0, unwinder.failedReads());
            }
            try (Unwinder blind = new Unwinder(() -> maps, -1, System::nanoTime, new ElfFiles(), new FrameSymbols())) {
                assertEquals("ERROR MEMORY_INVALID", unwind(blind, alloc, copy).getLast());
            }
        } finally {
            Os.closeFd(memFd);
        }
    }

    /**
     * The CFI test program, built without frame pointers, at a made-up address: the client's
     * hook is stepped by its frame pointer, then a() and main by their CFI alone, whatever
     * rbp holds; main's return address, 0, ends the walk.
     */
    @Test
    void framesWithoutFramePointersAreSteppedByTheirCfi() throws Exception {
        String program = CPrograms.program("heapprofd_cfi").toString();
        long programInode = (Long) Files.getAttribute(Path.of(program), "unix:ino");
        byte[] maps = String.format("""
                %x-%x r-xp 00000000 08:01 %d %s
                %x-%x r-xp 00000000 08:01 17 /opt/ffmtrace/libffmtrace_heapprofd.so
                %x-%x rw-p 00000000 00:00 0 [stack]
                """, PROGRAM, PROGRAM + 0x5000, programInode, program, CLIENT, CLIENT + 0x1000, STACK,
                STACK + STACK_SIZE).getBytes(StandardCharsets.US_ASCII);
        CallFrameInfo cfi = ElfFile.read(program).callFrameInfo();
        long inA = returnAddressOfCall(program, "a", "malloc");
        long inMain = returnAddressOfCall(program, "main", "a");
        long aFrame = cfi.ruleAt(inA - 1).cfaOffset();
        long mainFrame = cfi.ruleAt(inMain - 1).cfaOffset();
        assertEquals(CfaInterpreter.DWARF_RSP, cfi.ruleAt(inA - 1).cfaRegister());
        assertEquals(CfaInterpreter.DWARF_RSP, cfi.ruleAt(inMain - 1).cfaRegister());

        // The hook's frame at SP+0x40: rbp, then the return address into a(), whose frame starts above it.
        Frames frames = new Frames(CLIENT + 0x123, SP + 0x40);
        long aSp = SP + 0x50;
        frames.copy.set(Layouts.LONG_UNALIGNED, 0x40, 0xdead_beefL);
        frames.copy.set(Layouts.LONG_UNALIGNED, 0x48, PROGRAM + inA);
        frames.copy.set(Layouts.LONG_UNALIGNED, aSp + aFrame - 8 - SP, PROGRAM + inMain);
        frames.copy.set(Layouts.LONG_UNALIGNED, aSp + aFrame + mainFrame - 8 - SP, 0);
        try (Unwinder unwinder = new Unwinder(() -> maps, -1, System::nanoTime, new ElfFiles(), new FrameSymbols())) {
            assertEquals(List.of("a", "main"), unwind(unwinder, frames.alloc, frames.copy));
            assertEquals(0, unwinder.errors());
        }
    }

    /** The address after the first call of {@code callee} in {@code function}, as objdump disassembles it. */
    private static long returnAddressOfCall(String program, String function, String callee) throws Exception {
        boolean inFunction = false;
        boolean called = false;
        for (String[] words : ElfFileTest.run("objdump", "-d", "--no-show-raw-insn", program)) {
            if (words.length == 2 && words[1].endsWith(">:")) {
                inFunction = words[1].equals("<" + function + ">:");
            } else if (inFunction && called && words[0].endsWith(":")) {
                return Long.parseUnsignedLong(words[0].substring(0, words[0].length() - 1), 16);
            } else if (inFunction && words.length >= 4 && words[1].equals("call")
                    && (words[3].equals("<" + callee + ">") || words[3].equals("<" + callee + "@plt>"))) {
                called = true;
            }
        }
        throw new AssertionError(function + " calls no " + callee);
    }

    /** The names of the frames {@code unwinder} finds for the stack {@code stack} copies, as a dump names them. */
    private static List<String> unwind(Unwinder unwinder, AllocMetadata alloc, MemorySegment stack) {
        return names(unwinder, unwinder.unwind(alloc, stack, 0, stack.byteSize()));
    }

    private static List<String> names(Unwinder unwinder, List<Frame> frames) {
        return frames.stream().map(unwinder.symbols()::named).map(Frame::name).toList();
    }
}
