package dev.ffmtrace.heapprofd.service;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** The encodings of call frame information, checked against the examples of the DWARF and LSB specifications. */
class DwarfCursorTest {
    private static final long SECTION = 0x4000;

    private static DwarfCursor cursor(int... bytes) {
        byte[] section = new byte[bytes.length];
        for (int i = 0; i < bytes.length; i++) {
            section[i] = (byte) bytes[i];
        }
        return new DwarfCursor(section, SECTION);
    }

    @Test
    void leb128IsSevenBitsAByteLowFirst() throws CfiRefusal {
        // DWARF 5, tables 7.6 and 7.7.
        assertEquals(2, cursor(0x02).uleb128());
        assertEquals(127, cursor(0x7f).uleb128());
        assertEquals(128, cursor(0x80, 0x01).uleb128());
        assertEquals(12857, cursor(0x80 + 57, 100).uleb128());
        assertEquals(-2, cursor(0x7e).sleb128());
        assertEquals(127, cursor(0xff, 0x00).sleb128());
        assertEquals(-127, cursor(0x81, 0x7f).sleb128());
        assertEquals(-128, cursor(0x80, 0x7f).sleb128());
        assertEquals(-1, cursor(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f).sleb128());
        assertEquals(Long.MIN_VALUE, cursor(0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x7f).sleb128());
        assertThrows(CfiRefusal.class, () -> cursor(0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01)
                .uleb128(), "more than 10 bytes");
        assertThrows(CfiRefusal.class, () -> cursor(0x80, 0x80).uleb128(), "cut short");
    }

    @Test
    void pointersAreAbsolutePcRelativeOrDataRelative() throws CfiRefusal {
        assertEquals(0x1122334455667788L, cursor(0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11)
                .pointer(DwarfCursor.DW_EH_PE_ABSPTR, DwarfCursor.NO_DATA_BASE));
        assertEquals(0xfffffff0L, cursor(0xf0, 0xff, 0xff, 0xff).pointer(DwarfCursor.DW_EH_PE_UDATA4, 0));
        assertEquals(-16, cursor(0xf0, 0xff, 0xff, 0xff).pointer(DwarfCursor.DW_EH_PE_SDATA4, 0));
        assertEquals(0xfff0, cursor(0xf0, 0xff).pointer(DwarfCursor.DW_EH_PE_UDATA2, 0));
        assertEquals(-16, cursor(0xf0, 0xff).pointer(DwarfCursor.DW_EH_PE_SDATA2, 0));
        assertEquals(-1, cursor(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff).pointer(DwarfCursor.DW_EH_PE_SDATA8, 0));
        assertEquals(-1, cursor(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff).pointer(DwarfCursor.DW_EH_PE_UDATA8, 0));
        assertEquals(128, cursor(0x80, 0x01).pointer(DwarfCursor.DW_EH_PE_ULEB128, 0));
        assertEquals(-128, cursor(0x80, 0x7f).pointer(DwarfCursor.DW_EH_PE_SLEB128, 0));

        // pc-relative: to the address of the field itself, here the section's fifth byte.
        DwarfCursor cursor = cursor(0, 0, 0, 0, 0xf0, 0xff, 0xff, 0xff);
        cursor.skip(4);
        assertEquals(SECTION + 4 - 16,
                cursor.pointer(DwarfCursor.DW_EH_PE_PCREL | DwarfCursor.DW_EH_PE_SDATA4, DwarfCursor.NO_DATA_BASE));
        assertEquals(0x9000 + 0x10, cursor(0x10, 0, 0, 0)
                .pointer(DwarfCursor.DW_EH_PE_DATAREL | DwarfCursor.DW_EH_PE_SDATA4, 0x9000));
    }

    @Test
    void whatTheUnwinderDoesNotFollowIsRefused() {
        int[] four = {1, 2, 3, 4};
        assertThrows(CfiRefusal.class, () -> cursor(four).pointer(DwarfCursor.DW_EH_PE_INDIRECT
                | DwarfCursor.DW_EH_PE_PCREL | DwarfCursor.DW_EH_PE_SDATA4, 0), "indirect");
        assertThrows(CfiRefusal.class, () -> cursor(four).pointer(DwarfCursor.DW_EH_PE_OMIT, 0), "omitted");
        assertThrows(CfiRefusal.class, () -> cursor(four).pointer(0x20 | DwarfCursor.DW_EH_PE_UDATA4, 0), "textrel");
        assertThrows(CfiRefusal.class, () -> cursor(four).pointer(0x40 | DwarfCursor.DW_EH_PE_UDATA4, 0), "funcrel");
        assertThrows(CfiRefusal.class, () -> cursor(four).pointer(0x50, 0), "aligned");
        assertThrows(CfiRefusal.class, () -> cursor(four).pointer(DwarfCursor.DW_EH_PE_DATAREL
                | DwarfCursor.DW_EH_PE_SDATA4, DwarfCursor.NO_DATA_BASE), "data-relative without a base");
        assertThrows(CfiRefusal.class, () -> cursor(four).pointer(0x05, 0), "no such format");
        assertThrows(CfiRefusal.class, () -> cursor(four).pointer(DwarfCursor.DW_EH_PE_UDATA8, 0), "past the end");
    }

    @Test
    void aRangeBoundsEveryRead() throws CfiRefusal {
        DwarfCursor cursor = cursor(1, 2, 3, 4, 5, 6, 7, 8);
        cursor.range(2, 4);
        assertEquals(0x0403, cursor.u16());
        assertThrows(CfiRefusal.class, cursor::u8);
        assertThrows(CfiRefusal.class, () -> cursor.range(2, 9));
        assertThrows(CfiRefusal.class, () -> cursor.range(-1, 4));
        assertThrows(CfiRefusal.class, () -> cursor.range(5, 4));
        cursor.range(0, 8);
        assertThrows(CfiRefusal.class, () -> cursor.skip(9));
        assertThrows(CfiRefusal.class, () -> cursor.skip(-1));
        assertEquals(0x0807060504030201L, cursor.u64());
    }
}
