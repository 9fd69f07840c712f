package dev.ffmtrace.heapprofd.service;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;

/**
 * What the unwinder needs of an ELF file a client maps: its loadable segments (a file
 * offset to the address the file's symbols use), the function symbols of {@code .symtab}
 * and {@code .dynsym} (an address to a function name), its GNU build id, and the call
 * frame information of {@code .eh_frame} ({@link CallFrameInfo}), found by section name.
 *
 * <p>The file is the client's choice (a path in its maps), so it is untrusted: only 64-bit
 * little-endian ELF is read; every table is copied before it is parsed, bounded in size
 * and count, and every offset and index is checked against what was copied. A file that
 * is not what it claims gives {@link #read} null or fewer symbols, never an exception.
 *
 * <p>The symbol tables are copied when the file is read but parsed and sorted on the first
 * lookup ({@link #functionAt}): the unwinder reads a file for its CFI while a client
 * waits, and names frames only when a profile is dumped ({@link FrameSymbols}); libjvm's
 * 58,000 symbols take 10 ms to sort warm. Thread-safe: the table is built once, under
 * this file's lock; the names it decodes on first use any thread may race to decode (a
 * String is safe to publish so).
 */
final class ElfFile {
    /** A symbol or string table larger than this is not read: ≈ 2.8M symbols. */
    static final int MAX_TABLE_BYTES = 64 << 20;
    private static final int MAX_PROGRAM_HEADERS = 1024;
    private static final int MAX_SECTIONS = 1 << 16;
    private static final int MAX_NOTES_BYTES = 64 << 10;
    private static final int MAX_BUILD_ID_BYTES = 64;
    private static final int MAX_NAME_BYTES = 1024;
    private static final int MAX_SECTION_NAMES_BYTES = 1 << 20;
    /** How {@link #unsignedOrder} packs an address and its index into one positive long. */
    private static final int PACKED_INDEX_BITS = 24;
    private static final int PACKED_ADDRESS_BITS = 63 - PACKED_INDEX_BITS;
    /** How far back a lookup looks for a symbol that holds the address when the nearest does not. */
    private static final int OVERLAP_SCAN = 16;

    private static final int EHDR_SIZE = 64;
    private static final int PHDR_SIZE = 56;
    private static final int SHDR_SIZE = 64;
    private static final int SYM_SIZE = 24;
    private static final int PT_LOAD = 1;
    private static final int PT_NOTE = 4;
    private static final int SHT_SYMTAB = 2;
    private static final int SHT_DYNSYM = 11;
    private static final int SHT_STRTAB = 3;
    private static final int SHT_NOBITS = 8;
    private static final int STT_FUNC = 2;
    private static final int STT_GNU_IFUNC = 10;
    private static final int NT_GNU_BUILD_ID = 3;
    private static final byte[] EH_FRAME = ".eh_frame".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] EH_FRAME_HDR = ".eh_frame_hdr".getBytes(StandardCharsets.US_ASCII);

    /** The file's bytes. */
    interface Source {
        /** The file's size: nothing past it is read, nor allocated for. */
        long size() throws IOException;

        /** Reads into all of {@code into} from {@code offset}; how many bytes were read, fewer at the end. */
        int read(long offset, byte[] into) throws IOException;
    }

    /** A PT_LOAD segment: file bytes {@code [offset, offset + fileSize)} at {@code vaddr}. */
    private record Segment(long offset, long vaddr, long fileSize) {
    }

    private final Segment[] segments;
    private final byte[] buildId;
    private final CallFrameInfo callFrameInfo;
    /** The copied symbol tables, until {@link #functions} is built from them; guarded by this. */
    private Symbols symbols;
    private volatile Functions functions;

    private ElfFile(Segment[] segments, Symbols symbols, byte[] buildId, CallFrameInfo callFrameInfo) {
        this.segments = segments;
        this.symbols = symbols;
        this.buildId = buildId;
        this.callFrameInfo = callFrameInfo;
    }

    /**
     * Reads the ELF file at {@code path}: null if it is not a regular file, cannot be read
     * or is not a 64-bit little-endian ELF.
     */
    static ElfFile read(String path) {
        try {
            Path file = Path.of(path);
            // Not a FIFO or a device, whose open or read could block this thread for good.
            if (!Files.isRegularFile(file)) {
                return null;
            }
            try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
                return read(new Source() {
                    @Override
                    public long size() throws IOException {
                        return channel.size();
                    }

                    @Override
                    public int read(long offset, byte[] into) throws IOException {
                        ByteBuffer buffer = ByteBuffer.wrap(into);
                        while (buffer.hasRemaining() && channel.read(buffer, offset + buffer.position()) >= 0) {
                            // Read on: a positional read may return fewer bytes than asked.
                        }
                        return buffer.position();
                    }
                });
            }
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    /** Reads an ELF file from {@code source}: null if it is not a 64-bit little-endian ELF. */
    static ElfFile read(Source source) throws IOException {
        Source bounded = new Bounded(source, source.size());
        ByteBuffer header = copy(bounded, 0, EHDR_SIZE);
        if (header == null || header.getInt(0) != 0x464c457f || header.get(4) != 2 || header.get(5) != 1) {
            return null;
        }
        long phoff = header.getLong(0x20);
        long shoff = header.getLong(0x28);
        int phentsize = Short.toUnsignedInt(header.getShort(0x36));
        int phnum = Short.toUnsignedInt(header.getShort(0x38));
        int shentsize = Short.toUnsignedInt(header.getShort(0x3a));
        int shnum = Short.toUnsignedInt(header.getShort(0x3c));
        int shstrndx = Short.toUnsignedInt(header.getShort(0x3e));

        List<Segment> segments = new ArrayList<>();
        byte[] buildId = null;
        if (phentsize >= PHDR_SIZE && phnum <= MAX_PROGRAM_HEADERS) {
            ByteBuffer headers = copyTable(bounded, phoff, phentsize, phnum);
            for (int i = 0; headers != null && i < phnum; i++) {
                int at = i * phentsize;
                int type = headers.getInt(at);
                long offset = headers.getLong(at + 8);
                long vaddr = headers.getLong(at + 16);
                long fileSize = headers.getLong(at + 32);
                if (type == PT_LOAD && fileSize > 0 && offset >= 0 && offset + fileSize > offset) {
                    segments.add(new Segment(offset, vaddr, fileSize));
                } else if (type == PT_NOTE && buildId == null && fileSize > 0 && fileSize <= MAX_NOTES_BYTES) {
                    ByteBuffer notes = copy(bounded, offset, (int) fileSize);
                    buildId = notes == null ? null : buildId(notes);
                }
            }
        }

        Symbols symbols = new Symbols();
        CallFrameInfo callFrameInfo = null;
        if (shentsize >= SHDR_SIZE && shnum <= MAX_SECTIONS) {
            ByteBuffer sections = copyTable(bounded, shoff, shentsize, shnum);
            for (int i = 0; sections != null && i < shnum; i++) {
                int type = sections.getInt(i * shentsize + 4);
                if (type == SHT_SYMTAB || type == SHT_DYNSYM) {
                    symbols.read(bounded, sections, shentsize, shnum, i);
                }
            }
            if (sections != null) {
                callFrameInfo = callFrameInfo(bounded, sections, shentsize, shnum, shstrndx);
            }
        }
        return new ElfFile(segments.toArray(Segment[]::new), symbols, buildId, callFrameInfo);
    }

    /** The CFI of the sections named .eh_frame and .eh_frame_hdr; null without a readable .eh_frame. */
    private static CallFrameInfo callFrameInfo(Source source, ByteBuffer sections, int shentsize, int shnum,
                                               int namesSection) throws IOException {
        if (namesSection <= 0 || namesSection >= shnum) {
            return null;
        }
        int names = namesSection * shentsize;
        long namesSize = sections.getLong(names + 32);
        if (namesSize <= 0 || namesSize > MAX_SECTION_NAMES_BYTES) {
            return null;
        }
        ByteBuffer nameTable = copy(source, sections.getLong(names + 24), (int) namesSize);
        if (nameTable == null) {
            return null;
        }
        int frames = -1;
        int header = -1;
        for (int i = 0; i < shnum; i++) {
            int at = i * shentsize;
            if (sections.getInt(at + 4) != SHT_NOBITS) {
                long name = Integer.toUnsignedLong(sections.getInt(at));
                if (named(nameTable, name, EH_FRAME)) {
                    frames = at;
                } else if (named(nameTable, name, EH_FRAME_HDR)) {
                    header = at;
                }
            }
        }
        ByteBuffer framesBytes = frames < 0 ? null : section(source, sections, frames);
        if (framesBytes == null) {
            return null;
        }
        ByteBuffer headerBytes = header < 0 ? null : section(source, sections, header);
        return CallFrameInfo.of(framesBytes.array(), sections.getLong(frames + 16),
                headerBytes == null ? null : headerBytes.array(), header < 0 ? 0 : sections.getLong(header + 16));
    }

    /** Whether the name at {@code offset} of the section names is {@code expected}, whole. */
    private static boolean named(ByteBuffer names, long offset, byte[] expected) {
        if (offset > names.limit() - expected.length - 1) {
            return false;
        }
        for (int i = 0; i < expected.length; i++) {
            if (names.get((int) offset + i) != expected[i]) {
                return false;
            }
        }
        return names.get((int) offset + expected.length) == 0;
    }

    /** The bytes of the section whose header is at {@code at}; null if they are not all in the file, or too many. */
    private static ByteBuffer section(Source source, ByteBuffer sections, int at) throws IOException {
        long size = sections.getLong(at + 32);
        return size <= 0 || size > MAX_TABLE_BYTES ? null : copy(source, sections.getLong(at + 24), (int) size);
    }

    /**
     * The address the file's symbols use for the byte at {@code fileOffset}, through the
     * segment that loads it; -1 if no segment loads it.
     */
    long vaddrOf(long fileOffset) {
        for (Segment segment : segments) {
            if (fileOffset >= segment.offset() && fileOffset - segment.offset() < segment.fileSize()) {
                return segment.vaddr() + (fileOffset - segment.offset());
            }
        }
        return -1;
    }

    /** The function whose {@code [value, value + size)} holds {@code vaddr}, or null. */
    String functionAt(long vaddr) {
        return functions().at(vaddr);
    }

    /** Function symbols read, both tables together. */
    int symbolCount() {
        return functions().starts.length;
    }

    private Functions functions() {
        Functions built = functions;
        if (built == null) {
            synchronized (this) {
                built = functions;
                if (built == null) {
                    built = symbols.build();
                    functions = built;
                    symbols = null;
                }
            }
        }
        return built;
    }

    /** The call frame information of .eh_frame, or null if the file has none that can be read. */
    CallFrameInfo callFrameInfo() {
        return callFrameInfo;
    }

    /** The GNU build id (the NT_GNU_BUILD_ID note), in hex; null if the file has none. */
    String buildId() {
        return buildId == null ? null : HexFormat.of().formatHex(buildId);
    }

    private static byte[] buildId(ByteBuffer notes) {
        int at = 0;
        while (notes.limit() - at >= 12) {
            long nameSize = Integer.toUnsignedLong(notes.getInt(at));
            long descSize = Integer.toUnsignedLong(notes.getInt(at + 4));
            int type = notes.getInt(at + 8);
            long name = at + 12L;
            long desc = name + align4(nameSize);
            long next = desc + align4(descSize);
            if (next > notes.limit()) {
                return null;
            }
            if (type == NT_GNU_BUILD_ID && nameSize == 4 && notes.getInt((int) name) == 0x00554e47
                    && descSize > 0 && descSize <= MAX_BUILD_ID_BYTES) {
                byte[] id = new byte[(int) descSize];
                notes.get((int) desc, id);
                return id;
            }
            at = (int) next;
        }
        return null;
    }

    private static long align4(long size) {
        return (size + 3) & ~3L;
    }

    /** The symbol tables copied from the file (at most two: .symtab and .dynsym) and their string tables. */
    private static final class Symbols {
        final List<ByteBuffer> tables = new ArrayList<>(2);
        final List<byte[]> nameTables = new ArrayList<>(2);

        /** Copies the symbol table of section {@code index} and its string table, if both are sound. */
        void read(Source source, ByteBuffer sections, int shentsize, int shnum, int index) throws IOException {
            int at = index * shentsize;
            long offset = sections.getLong(at + 24);
            long size = sections.getLong(at + 32);
            int link = sections.getInt(at + 40);
            if (size <= 0 || size > MAX_TABLE_BYTES || link <= 0 || link >= shnum || nameTables.size() == 2) {
                return;
            }
            int linked = link * shentsize;
            long stringsOffset = sections.getLong(linked + 24);
            long stringsSize = sections.getLong(linked + 32);
            if (sections.getInt(linked + 4) != SHT_STRTAB || stringsSize <= 0 || stringsSize > MAX_TABLE_BYTES) {
                return;
            }
            ByteBuffer table = copy(source, offset, (int) (size - size % SYM_SIZE));
            ByteBuffer strings = copy(source, stringsOffset, (int) stringsSize);
            if (table == null || strings == null) {
                return;
            }
            tables.add(table);
            nameTables.add(strings.array());
        }

        /** The function symbols of the copied tables, sorted by address. */
        Functions build() {
            int capacity = 0;
            for (ByteBuffer table : tables) {
                capacity += table.limit() / SYM_SIZE;
            }
            long[] starts = new long[capacity];
            long[] sizes = new long[capacity];
            int[] nameOffsets = new int[capacity];
            byte[] nameTableOf = new byte[capacity];
            int count = 0;
            for (int t = 0; t < tables.size(); t++) {
                ByteBuffer table = tables.get(t);
                int stringsSize = nameTables.get(t).length;
                for (int symbol = 0; symbol + SYM_SIZE <= table.limit(); symbol += SYM_SIZE) {
                    int name = table.getInt(symbol);
                    int type = table.get(symbol + 4) & 0xf;
                    int section = Short.toUnsignedInt(table.getShort(symbol + 6));
                    long value = table.getLong(symbol + 8);
                    long symbolSize = table.getLong(symbol + 16);
                    if ((type == STT_FUNC || type == STT_GNU_IFUNC) && section != 0 && value != 0 && symbolSize > 0
                            && name > 0 && name < stringsSize) {
                        starts[count] = value;
                        sizes[count] = symbolSize;
                        nameOffsets[count] = name;
                        nameTableOf[count] = (byte) t;
                        count++;
                    }
                }
            }
            int[] order = unsignedOrder(starts, count);
            long[] sortedStarts = new long[count];
            long[] sortedSizes = new long[count];
            int[] sortedNames = new int[count];
            byte[] sortedTables = new byte[count];
            for (int i = 0; i < count; i++) {
                sortedStarts[i] = starts[order[i]];
                sortedSizes[i] = sizes[order[i]];
                sortedNames[i] = nameOffsets[order[i]];
                sortedTables[i] = nameTableOf[order[i]];
            }
            return new Functions(sortedStarts, sortedSizes, sortedNames, nameTables.toArray(byte[][]::new),
                    sortedTables);
        }
    }

    /** The function symbols, sorted by address: {@code [start, start + size)} is the function. */
    private static final class Functions {
        final long[] starts;
        private final long[] sizes;
        private final int[] nameOffsets;
        private final byte[][] nameTables;
        private final byte[] nameTableOf;
        private final String[] names;

        Functions(long[] starts, long[] sizes, int[] nameOffsets, byte[][] nameTables, byte[] nameTableOf) {
            this.starts = starts;
            this.sizes = sizes;
            this.nameOffsets = nameOffsets;
            this.nameTables = nameTables;
            this.nameTableOf = nameTableOf;
            this.names = new String[starts.length];
        }

        String at(long vaddr) {
            int high = Addresses.lastAtOrBelow(starts, vaddr);
            for (int i = high; i >= 0 && i > high - OVERLAP_SCAN; i--) {
                if (Long.compareUnsigned(vaddr - starts[i], sizes[i]) < 0) {
                    return name(i);
                }
            }
            return null;
        }

        private String name(int symbol) {
            String name = names[symbol];
            if (name == null) {
                byte[] table = nameTables[nameTableOf[symbol]];
                int from = nameOffsets[symbol];
                int end = from;
                while (end < table.length && end - from < MAX_NAME_BYTES && table[end] != 0) {
                    end++;
                }
                name = new String(table, from, end - from, StandardCharsets.UTF_8);
                names[symbol] = name;
            }
            return name;
        }
    }

    /**
     * The indexes of the first {@code count} addresses of {@code addresses}, lowest address
     * first (unsigned): the order to sort arrays that run parallel to it in.
     */
    static int[] unsignedOrder(long[] addresses, int count) {
        // Each address with its index in one long, sorted as primitives: ties stay in index
        // order, as a stable sort leaves them. Every real file's addresses and counts fit
        // (a 1 TiB address space, 16 M entries; libjvm's tables are tens of thousands), and
        // sorting them boxed was most of the first unwind through a library.
        if (count <= 1 << PACKED_INDEX_BITS) {
            long[] keys = new long[count];
            int packed = 0;
            while (packed < count && addresses[packed] >>> PACKED_ADDRESS_BITS == 0) {
                keys[packed] = addresses[packed] << PACKED_INDEX_BITS | packed;
                packed++;
            }
            if (packed == count) {
                Arrays.sort(keys);
                int[] order = new int[count];
                for (int i = 0; i < count; i++) {
                    order[i] = (int) (keys[i] & ((1L << PACKED_INDEX_BITS) - 1));
                }
                return order;
            }
        }
        Integer[] order = new Integer[count];
        for (int i = 0; i < count; i++) {
            order[i] = i;
        }
        Arrays.sort(order, (x, y) -> Long.compareUnsigned(addresses[x], addresses[y]));
        return Arrays.stream(order).mapToInt(Integer::intValue).toArray();
    }

    /** A source whose size is read once. */
    private record Bounded(Source source, long size) implements Source {
        @Override
        public int read(long offset, byte[] into) throws IOException {
            return source.read(offset, into);
        }
    }

    /** {@code count} entries of {@code entrySize} bytes at {@code offset}; null if any lies outside the file. */
    private static ByteBuffer copyTable(Source source, long offset, int entrySize, int count) throws IOException {
        long size = (long) entrySize * count;
        return size > MAX_TABLE_BYTES ? null : copy(source, offset, (int) size);
    }

    /** A copy of {@code size} bytes at {@code offset}, little-endian; null if the file does not hold them all. */
    private static ByteBuffer copy(Source source, long offset, int size) throws IOException {
        if (offset < 0 || size < 0 || offset + size < offset || offset + size > source.size()) {
            return null;
        }
        byte[] bytes = new byte[size];
        if (size > 0 && source.read(offset, bytes) != size) {
            return null;
        }
        return ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
    }
}
