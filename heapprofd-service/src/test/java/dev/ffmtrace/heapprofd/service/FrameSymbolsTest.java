package dev.ffmtrace.heapprofd.service;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The table by which dumps name the frames in ELF files: bounded, and naming only what it holds. */
class FrameSymbolsTest {
    private static Frame.Module module(int i) {
        return new Frame.Module("/lib/lib" + i + ".so", null, 0x1000L * i, 0x1000L * i + 0x1000, 0, 0);
    }

    @Test
    void aModuleThatDoesNotFitIsRefusedSoItsFramesAreNamedAtOnce() {
        ElfFile elf = ElfFile.read("/proc/self/exe");
        assertNotNull(elf);
        FrameSymbols symbols = new FrameSymbols();
        for (int i = 0; i < FrameSymbols.MAX_MODULES; i++) {
            assertTrue(symbols.add(module(i), elf));
        }
        assertTrue(symbols.add(module(0), elf), "a module it holds is held");
        assertFalse(symbols.add(module(FrameSymbols.MAX_MODULES), elf));
    }

    @Test
    void aFrameOfAModuleItDoesNotHoldKeepsItsName() {
        Frame frame = new Frame("lib7.so+0x10", module(7), 0x10);
        assertSame(frame, new FrameSymbols().named(frame));
        assertEquals("lib7.so+0x10", new FrameSymbols().named(frame).name());
    }
}
