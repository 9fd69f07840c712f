package dev.ffmtrace.heapprofd.service;

import java.util.Arrays;

import static dev.ffmtrace.heapprofd.service.DwarfCursor.DW_EH_PE_ABSPTR;
import static dev.ffmtrace.heapprofd.service.DwarfCursor.DW_EH_PE_DATAREL;
import static dev.ffmtrace.heapprofd.service.DwarfCursor.DW_EH_PE_OMIT;
import static dev.ffmtrace.heapprofd.service.DwarfCursor.DW_EH_PE_SDATA4;
import static dev.ffmtrace.heapprofd.service.DwarfCursor.NO_DATA_BASE;

/**
 * The call frame information of an ELF file's {@code .eh_frame} (the LSB's format: CIEs
 * and FDEs, augmentations {@code z}, {@code R}, {@code P}, {@code L} and {@code S}), to
 * find the {@link CfaRule} at a pc of the file's code. The FDE of a pc is found through
 * {@code .eh_frame_hdr}'s sorted table when the file has one in the encoding every linker
 * writes (data-relative 4-byte entries), else through an index of every FDE built here once.
 *
 * <p>Both sections are copies of the file's bytes, and the file is untrusted: every
 * offset and length is checked against them, the index holds at most {@value #MAX_FDES}
 * FDEs, and an FDE whose CFI is malformed, or not of a kind the unwinder follows, is
 * {@link #ruleAt} null, never an exception. Immutable.
 */
final class CallFrameInfo {
    /** More FDEs than any library has (libc has ≈ 3,000; a large C++ binary ≈ 100,000). */
    static final int MAX_FDES = 1 << 20;
    private static final long CIE_ID = 0;
    private static final long EXTENDED_LENGTH = 0xffff_ffffL;
    private static final int EH_FRAME_HDR_VERSION = 1;
    /** The only encoding of .eh_frame_hdr's table searched in place: 8-byte entries relative to the section. */
    private static final int HDR_TABLE_ENCODING = DW_EH_PE_DATAREL | DW_EH_PE_SDATA4;
    private static final int HDR_ENTRY_SIZE = 8;
    /**
     * Longer than any augmentation string a toolchain writes ("zPLR", "zRS"): a CIE is read
     * again for each of its FDEs, so its string must not cost the length of the section.
     */
    private static final int MAX_AUGMENTATION_BYTES = 16;

    /** The CIE fields an FDE's instructions and pointers are read with. */
    private record Cie(long codeAlignment, long dataAlignment, int pointerEncoding, boolean augmentationData,
                       int instructionsFrom, int instructionsTo) {
    }

    /** An FDE: the function at {@code [start, end)} and its instructions. */
    private record Fde(Cie cie, long start, long end, int instructionsFrom, int instructionsTo) {
    }

    private final byte[] frames;
    private final long framesAddress;
    private final byte[] header;
    private final long headerAddress;
    // .eh_frame_hdr's table: tableCount entries at tableOffset of header, or none (-1).
    private final int tableOffset;
    private final int tableCount;
    // Without that table, every FDE's start, sorted, and its offset in frames.
    private final long[] indexStarts;
    private final int[] indexOffsets;

    private CallFrameInfo(byte[] frames, long framesAddress, byte[] header, long headerAddress, int tableOffset,
                          int tableCount, long[] indexStarts, int[] indexOffsets) {
        this.frames = frames;
        this.framesAddress = framesAddress;
        this.header = header;
        this.headerAddress = headerAddress;
        this.tableOffset = tableOffset;
        this.tableCount = tableCount;
        this.indexStarts = indexStarts;
        this.indexOffsets = indexOffsets;
    }

    /**
     * The CFI of {@code frames}, the bytes of .eh_frame at {@code framesAddress}, found
     * through {@code header}, those of .eh_frame_hdr at {@code headerAddress}, if not null.
     */
    static CallFrameInfo of(byte[] frames, long framesAddress, byte[] header, long headerAddress) {
        if (header != null) {
            try {
                DwarfCursor cursor = new DwarfCursor(header, headerAddress);
                int version = cursor.u8();
                int framesPointerEncoding = cursor.u8();
                int countEncoding = cursor.u8();
                int tableEncoding = cursor.u8();
                long framesPointer = cursor.pointer(framesPointerEncoding, headerAddress);
                if (version == EH_FRAME_HDR_VERSION && framesPointer == framesAddress && countEncoding != DW_EH_PE_OMIT
                        && tableEncoding == HDR_TABLE_ENCODING) {
                    long count = cursor.pointer(countEncoding, headerAddress);
                    long room = (cursor.end() - cursor.position()) / HDR_ENTRY_SIZE;
                    if (count >= 0 && count <= room) {
                        return new CallFrameInfo(frames, framesAddress, header, headerAddress, cursor.position(),
                                (int) count, null, null);
                    }
                }
            } catch (CfiRefusal refusal) {
                // An unusable header: the FDEs are indexed here instead.
            }
        }
        return indexed(frames, framesAddress);
    }

    /** Indexes every FDE of {@code frames} that parses, up to the first entry whose length does not. */
    private static CallFrameInfo indexed(byte[] frames, long framesAddress) {
        CallFrameInfo unindexed = new CallFrameInfo(frames, framesAddress, null, 0, -1, 0, null, null);
        DwarfCursor cursor = new DwarfCursor(frames, framesAddress);
        long[] starts = new long[16];
        int[] offsets = new int[16];
        int count = 0;
        int at = 0;
        while (at < frames.length && count < MAX_FDES) {
            int end;
            long id;
            try {
                end = unindexed.entry(cursor, at);
                id = cursor.u32();
            } catch (CfiRefusal refusal) {
                break;
            }
            if (id != CIE_ID) {
                try {
                    Fde fde = unindexed.fdeAt(cursor, at);
                    if (count == starts.length) {
                        starts = Arrays.copyOf(starts, count * 2);
                        offsets = Arrays.copyOf(offsets, count * 2);
                    }
                    starts[count] = fde.start();
                    offsets[count] = at;
                    count++;
                } catch (CfiRefusal refusal) {
                    // This FDE is unusable; the next may not be.
                }
            }
            at = end;
        }
        int[] order = ElfFile.unsignedOrder(starts, count);
        long[] sortedStarts = new long[count];
        int[] sortedOffsets = new int[count];
        for (int i = 0; i < count; i++) {
            sortedStarts[i] = starts[order[i]];
            sortedOffsets[i] = offsets[order[i]];
        }
        return new CallFrameInfo(frames, framesAddress, null, 0, -1, 0, sortedStarts, sortedOffsets);
    }

    /**
     * The rule at {@code pc}, an address as the file's symbols use them; null if no FDE
     * holds it or its CFI cannot be followed.
     */
    CfaRule ruleAt(long pc) {
        try {
            int offset = candidate(pc);
            if (offset < 0) {
                return null;
            }
            DwarfCursor cursor = new DwarfCursor(frames, framesAddress);
            Fde fde = fdeAt(cursor, offset);
            if (Long.compareUnsigned(pc - fde.start(), fde.end() - fde.start()) >= 0) {
                return null;
            }
            Cie cie = fde.cie();
            return CfaInterpreter.ruleAt(cursor, cie.codeAlignment(), cie.dataAlignment(), cie.pointerEncoding(),
                    cie.instructionsFrom(), cie.instructionsTo(), fde.instructionsFrom(), fde.instructionsTo(),
                    fde.start(), pc);
        } catch (CfiRefusal refusal) {
            return null;
        }
    }

    /** Whether the FDEs are found through .eh_frame_hdr's table rather than an index built here. */
    boolean searchesHeaderTable() {
        return tableOffset >= 0;
    }

    /** The FDEs the table or the index holds. */
    int fdeCount() {
        return tableOffset >= 0 ? tableCount : indexStarts.length;
    }

    /** The offset in .eh_frame of the FDE with the last start at or below {@code pc}, or -1. */
    private int candidate(long pc) throws CfiRefusal {
        int low = 0;
        int high = fdeCount() - 1;
        while (low <= high) {
            int middle = (low + high) >>> 1;
            if (Long.compareUnsigned(start(middle), pc) <= 0) {
                low = middle + 1;
            } else {
                high = middle - 1;
            }
        }
        if (high < 0) {
            return -1;
        }
        if (tableOffset < 0) {
            return indexOffsets[high];
        }
        long offset = headerAddress + s32(tableOffset + high * HDR_ENTRY_SIZE + 4) - framesAddress;
        if (offset < 0 || offset >= frames.length) {
            throw new CfiRefusal("FDE outside .eh_frame");
        }
        return (int) offset;
    }

    private long start(int entry) {
        return tableOffset < 0 ? indexStarts[entry] : headerAddress + s32(tableOffset + entry * HDR_ENTRY_SIZE);
    }

    /** A 4-byte entry of the header's table, within it by the bound on its count. */
    private int s32(int at) {
        return (header[at] & 0xff) | (header[at + 1] & 0xff) << 8 | (header[at + 2] & 0xff) << 16
                | (header[at + 3] & 0xff) << 24;
    }

    /**
     * Reads the length of the entry at {@code offset}, leaving {@code cursor} at its CIE id
     * or pointer, bounded by the entry; the offset of the entry's end.
     */
    private int entry(DwarfCursor cursor, long offset) throws CfiRefusal {
        cursor.range(offset, frames.length);
        long length = cursor.u32();
        if (length == EXTENDED_LENGTH) {
            length = cursor.u64();
        }
        if (length < 4 || length > cursor.end() - cursor.position()) {
            throw new CfiRefusal("entry length " + length);
        }
        int end = cursor.position() + (int) length;
        cursor.range(cursor.position(), end);
        return end;
    }

    private Fde fdeAt(DwarfCursor cursor, int offset) throws CfiRefusal {
        int end = entry(cursor, offset);
        int idField = cursor.position();
        long ciePointer = cursor.u32();
        if (ciePointer == CIE_ID) {
            throw new CfiRefusal("a CIE, not an FDE");
        }
        Cie cie = cieAt(cursor, idField - ciePointer);
        cursor.range(idField + 4, end);
        long start = cursor.pointer(cie.pointerEncoding(), NO_DATA_BASE);
        long range = cursor.value(cie.pointerEncoding());
        if (cie.augmentationData()) {
            cursor.skip(cursor.uleb128());
        }
        return new Fde(cie, start, start + range, cursor.position(), end);
    }

    private Cie cieAt(DwarfCursor cursor, long offset) throws CfiRefusal {
        if (offset < 0) {
            throw new CfiRefusal("CIE before .eh_frame");
        }
        int end = entry(cursor, offset);
        if (cursor.u32() != CIE_ID) {
            throw new CfiRefusal("an FDE's CIE pointer to an FDE");
        }
        int version = cursor.u8();
        if (version != 1 && version != 3) {
            throw new CfiRefusal("CIE version " + version);
        }
        int augmentation = cursor.position();
        while (cursor.u8() != 0) {
            // The augmentation string, read again below once the fields before its data are.
            if (cursor.position() - augmentation > MAX_AUGMENTATION_BYTES) {
                throw new CfiRefusal("augmentation string longer than " + MAX_AUGMENTATION_BYTES + " bytes");
            }
        }
        int augmentationEnd = cursor.position() - 1;
        long codeAlignment = cursor.uleb128();
        long dataAlignment = cursor.sleb128();
        long returnAddress = version == 1 ? cursor.u8() : cursor.uleb128();
        if (returnAddress != CfaInterpreter.DWARF_RETURN_ADDRESS) {
            throw new CfiRefusal("return address column " + returnAddress + " is not x86-64's");
        }
        int pointerEncoding = DW_EH_PE_ABSPTR;
        boolean augmentationData = augmentationEnd > augmentation && frames[augmentation] == 'z';
        if (augmentationData) {
            long length = cursor.uleb128();
            if (length < 0 || length > cursor.end() - cursor.position()) {
                throw new CfiRefusal("augmentation data past the CIE");
            }
            int dataEnd = cursor.position() + (int) length;
            for (int i = augmentation + 1; i < augmentationEnd; i++) {
                if (frames[i] == 'R') {
                    pointerEncoding = cursor.u8();
                } else if (frames[i] == 'P') {
                    // The personality routine: only exceptions need it.
                    cursor.value(cursor.u8());
                } else if (frames[i] == 'L') {
                    // The encoding of the FDEs' LSDA pointers, in their augmentation data, skipped whole.
                    cursor.u8();
                } else if (frames[i] != 'S') {
                    // An augmentation this reader does not know: its data is skipped by the length.
                    break;
                }
            }
            cursor.skip(dataEnd - cursor.position());
        } else if (augmentationEnd > augmentation) {
            throw new CfiRefusal("augmentation without its data's length");
        }
        return new Cie(codeAlignment, dataAlignment, pointerEncoding, augmentationData, cursor.position(), end);
    }
}
