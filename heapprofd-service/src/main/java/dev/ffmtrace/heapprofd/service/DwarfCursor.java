package dev.ffmtrace.heapprofd.service;

/**
 * Reads the encodings of call frame information (fixed-size little-endian values, LEB128,
 * the {@code DW_EH_PE_*} pointer encodings of the LSB) from a range of a section's bytes,
 * which the section's file made up: a read past the range, or an encoding the unwinder does
 * not follow, is a {@link CfiRefusal}, never another exception. {@link #address} is the
 * virtual address of the byte read next, for pc-relative pointers.
 */
final class DwarfCursor {
    static final int DW_EH_PE_ABSPTR = 0x00;
    static final int DW_EH_PE_ULEB128 = 0x01;
    static final int DW_EH_PE_UDATA2 = 0x02;
    static final int DW_EH_PE_UDATA4 = 0x03;
    static final int DW_EH_PE_UDATA8 = 0x04;
    static final int DW_EH_PE_SLEB128 = 0x09;
    static final int DW_EH_PE_SDATA2 = 0x0a;
    static final int DW_EH_PE_SDATA4 = 0x0b;
    static final int DW_EH_PE_SDATA8 = 0x0c;
    static final int DW_EH_PE_PCREL = 0x10;
    static final int DW_EH_PE_DATAREL = 0x30;
    static final int DW_EH_PE_INDIRECT = 0x80;
    static final int DW_EH_PE_OMIT = 0xff;
    private static final int FORMAT_MASK = 0x0f;
    private static final int APPLICATION_MASK = 0x70;
    /** A 64-bit value takes at most 10 LEB128 bytes. */
    private static final int MAX_LEB128_BYTES = 10;

    /** No base for {@link #DW_EH_PE_DATAREL}: .eh_frame's own pointers have none on x86-64. */
    static final long NO_DATA_BASE = Long.MIN_VALUE;

    private final byte[] bytes;
    private final long sectionAddress;
    private int at;
    private int end;

    /** @param sectionAddress the virtual address of {@code bytes[0]} */
    DwarfCursor(byte[] bytes, long sectionAddress) {
        this.bytes = bytes;
        this.sectionAddress = sectionAddress;
        this.end = bytes.length;
    }

    /** Reads {@code [from, to)} of the section next. */
    DwarfCursor range(long from, long to) throws CfiRefusal {
        if (from < 0 || from > to || to > bytes.length) {
            throw new CfiRefusal("range past the section");
        }
        at = (int) from;
        end = (int) to;
        return this;
    }

    int position() {
        return at;
    }

    int end() {
        return end;
    }

    boolean hasRemaining() {
        return at < end;
    }

    /** The virtual address of the byte read next. */
    long address() {
        return sectionAddress + at;
    }

    void skip(long count) throws CfiRefusal {
        if (count < 0 || count > end - at) {
            throw new CfiRefusal("skip past the range");
        }
        at += (int) count;
    }

    int u8() throws CfiRefusal {
        need(1);
        return bytes[at++] & 0xff;
    }

    int u16() throws CfiRefusal {
        need(2);
        int value = (bytes[at] & 0xff) | (bytes[at + 1] & 0xff) << 8;
        at += 2;
        return value;
    }

    long u32() throws CfiRefusal {
        return Integer.toUnsignedLong(s32());
    }

    int s32() throws CfiRefusal {
        need(4);
        int value = (bytes[at] & 0xff) | (bytes[at + 1] & 0xff) << 8 | (bytes[at + 2] & 0xff) << 16
                | (bytes[at + 3] & 0xff) << 24;
        at += 4;
        return value;
    }

    long u64() throws CfiRefusal {
        long low = u32();
        return low | u32() << 32;
    }

    long uleb128() throws CfiRefusal {
        long value = 0;
        for (int i = 0; i < MAX_LEB128_BYTES; i++) {
            int b = u8();
            value |= (long) (b & 0x7f) << (7 * i);
            if ((b & 0x80) == 0) {
                return value;
            }
        }
        throw new CfiRefusal("LEB128 longer than 64 bits");
    }

    long sleb128() throws CfiRefusal {
        long value = 0;
        for (int i = 0; i < MAX_LEB128_BYTES; i++) {
            int b = u8();
            int shift = 7 * i;
            value |= (long) (b & 0x7f) << shift;
            if ((b & 0x80) == 0) {
                return shift + 7 < 64 && (b & 0x40) != 0 ? value | -1L << (shift + 7) : value;
            }
        }
        throw new CfiRefusal("LEB128 longer than 64 bits");
    }

    /** A register number or an operand that must fit an int (a LEB128 that claims more is a lie). */
    int ulebInt() throws CfiRefusal {
        long value = uleb128();
        if (value < 0 || value > Integer.MAX_VALUE) {
            throw new CfiRefusal("operand out of range");
        }
        return (int) value;
    }

    /**
     * A pointer in {@code encoding}: absolute, pc-relative (to the address of the field
     * itself) or data-relative (to {@code dataBase}, .eh_frame_hdr's address); indirect,
     * text-, function-relative and aligned pointers are refused, as is {@link #DW_EH_PE_OMIT}.
     */
    long pointer(int encoding, long dataBase) throws CfiRefusal {
        if (encoding == DW_EH_PE_OMIT || (encoding & DW_EH_PE_INDIRECT) != 0) {
            throw new CfiRefusal("indirect or omitted pointer");
        }
        long field = address();
        long value = value(encoding);
        return switch (encoding & APPLICATION_MASK) {
            case DW_EH_PE_ABSPTR -> value;
            case DW_EH_PE_PCREL -> field + value;
            case DW_EH_PE_DATAREL -> {
                if (dataBase == NO_DATA_BASE) {
                    throw new CfiRefusal("data-relative pointer without a base");
                }
                yield dataBase + value;
            }
            default -> throw new CfiRefusal("pointer application " + (encoding & APPLICATION_MASK));
        };
    }

    /** The value of a pointer in {@code encoding}'s format, its application ignored: an FDE's pc range, a skipped field. */
    long value(int encoding) throws CfiRefusal {
        return switch (encoding & FORMAT_MASK) {
            case DW_EH_PE_ABSPTR, DW_EH_PE_UDATA8, DW_EH_PE_SDATA8 -> u64();
            case DW_EH_PE_ULEB128 -> uleb128();
            case DW_EH_PE_UDATA2 -> u16();
            case DW_EH_PE_UDATA4 -> u32();
            case DW_EH_PE_SLEB128 -> sleb128();
            case DW_EH_PE_SDATA2 -> (short) u16();
            case DW_EH_PE_SDATA4 -> s32();
            default -> throw new CfiRefusal("pointer format " + (encoding & FORMAT_MASK));
        };
    }

    private void need(int count) throws CfiRefusal {
        if (end - at < count) {
            throw new CfiRefusal("read past the range");
        }
    }
}
