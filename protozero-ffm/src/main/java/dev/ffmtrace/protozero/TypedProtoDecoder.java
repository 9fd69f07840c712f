package dev.ffmtrace.protozero;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * The base of generated message decoders: one pass over the message records, for each
 * field the decoder's type declares, the last occurrence, how many there were and where
 * the first one is. Field lookups are then an array load by field id (last one wins for
 * a repeated field read as singular); repeated fields are iterated from their first
 * occurrence with {@link RepeatedFieldIterator} or {@link RepeatedScalarIterator}.
 *
 * <p>Fields the type does not declare are skipped. A decoder is reused across messages
 * with {@code reset}; decoding allocates nothing. Malformed input ends the pass: the
 * fields before the fault stay readable and {@link #status()} tells what went wrong.
 */
public abstract class TypedProtoDecoder {
    private static final short ABSENT = -1;

    private final short[] slotByFieldId;
    private final int[] counts;
    private final byte[] wireTypes;
    private final long[] values;
    private final long[] lengths;
    private final long[] firstFieldStarts;
    private final ProtoDecoder decoder = new ProtoDecoder();
    private final ProtoField view = new ProtoField();
    private MemorySegment data = MemorySegment.NULL;
    private long end;

    /**
     * @param slotByFieldId from {@link #slotTable}, shared by all decoders of the type
     */
    protected TypedProtoDecoder(short[] slotByFieldId) {
        this.slotByFieldId = slotByFieldId;
        int slots = 0;
        for (short slot : slotByFieldId) {
            slots = Math.max(slots, slot + 1);
        }
        counts = new int[slots];
        wireTypes = new byte[slots];
        values = new long[slots];
        lengths = new long[slots];
        firstFieldStarts = new long[slots];
    }

    /** Maps each of {@code fieldIds} to a slot; index by field id, -1 for undeclared ids. */
    protected static short[] slotTable(int... fieldIds) {
        int max = 0;
        for (int id : fieldIds) {
            if (id <= 0 || id > Short.MAX_VALUE) {
                throw new IllegalArgumentException("field id out of the decoder table's range 1.."
                        + Short.MAX_VALUE + ": " + id);
            }
            max = Math.max(max, id);
        }
        short[] table = new short[max + 1];
        Arrays.fill(table, ABSENT);
        for (int i = 0; i < fieldIds.length; i++) {
            table[fieldIds[i]] = (short) i;
        }
        return table;
    }

    /** Decodes all of {@code segment}. */
    public final void reset(MemorySegment segment) {
        reset(segment, 0, segment.byteSize());
    }

    /** Decodes the bytes of a length-delimited field, e.g. a nested message. */
    public final void reset(ProtoField lengthDelimited) {
        reset(lengthDelimited.segment(), lengthDelimited.offset(), lengthDelimited.length());
    }

    /** Decodes the {@code length} bytes at {@code offset} of {@code segment}. */
    public final void reset(MemorySegment segment, long offset, long length) {
        Arrays.fill(counts, 0);
        data = segment;
        end = offset + length;
        ProtoDecoder d = decoder.reset(segment, offset, length);
        ProtoField f = d.field();
        short[] table = slotByFieldId;
        while (d.next()) {
            int id = f.id();
            if (id >= table.length) {
                continue;
            }
            int slot = table[id];
            if (slot == ABSENT) {
                continue;
            }
            if (counts[slot]++ == 0) {
                firstFieldStarts[slot] = d.fieldStart();
            }
            wireTypes[slot] = (byte) f.wireType();
            values[slot] = f.asLong();
            lengths[slot] = f.length();
        }
    }

    /** {@link DecodeStatus#OK} unless the message is malformed. */
    public final DecodeStatus status() {
        return decoder.status();
    }

    public final boolean hasError() {
        return decoder.hasError();
    }

    private int slot(int fieldId) {
        if (fieldId <= 0 || fieldId >= slotByFieldId.length) {
            return ABSENT;
        }
        return slotByFieldId[fieldId];
    }

    /** Whether the field occurs at least once. */
    public final boolean has(int fieldId) {
        int slot = slot(fieldId);
        return slot != ABSENT && counts[slot] != 0;
    }

    /** How many times the field occurs. */
    public final int count(int fieldId) {
        int slot = slot(fieldId);
        return slot == ABSENT ? 0 : counts[slot];
    }

    /**
     * The last occurrence of the field as a view (valid until the next call on this
     * decoder); an invalid view if absent.
     */
    public final ProtoField field(int fieldId) {
        int slot = slot(fieldId);
        if (slot == ABSENT || counts[slot] == 0) {
            view.clear();
        } else {
            view.set(data, fieldId, wireTypes[slot], values[slot], lengths[slot]);
        }
        return view;
    }

    /** The last varint or fixed value of the field as 64 bits; 0 if absent or length-delimited. */
    protected final long longValue(int fieldId) {
        int slot = slot(fieldId);
        if (slot == ABSENT || counts[slot] == 0
                || wireTypes[slot] == ProtoWire.WIRE_TYPE_LENGTH_DELIMITED) {
            return 0;
        }
        return values[slot];
    }

    /** The last value of a string field; "" if absent. */
    protected final String stringValue(int fieldId) {
        return field(fieldId).asString();
    }

    /** A copy of the last value of a bytes field; empty if absent. */
    protected final byte[] bytesValue(int fieldId) {
        return field(fieldId).asBytes();
    }

    /**
     * Points {@code into} at the last occurrence of a message field.
     *
     * @return false, leaving {@code into} decoding an empty message, if the field is absent
     */
    protected final boolean nested(int fieldId, TypedProtoDecoder into) {
        ProtoField f = field(fieldId);
        if (f.wireType() != ProtoWire.WIRE_TYPE_LENGTH_DELIMITED || !f.valid()) {
            // An empty range of this message's own bytes, not MemorySegment.NULL: a decoder
            // then meets one segment class, and the JIT's code for heap-held requests is not
            // thrown away the first time an absent field hands it a native one.
            into.reset(data, 0, 0);
            return false;
        }
        into.reset(f);
        return true;
    }

    /**
     * Points {@code iterator} at every occurrence of a field: the elements of a repeated
     * one, or each time a singular one was given (protobuf merges those; the decoder's
     * accessors show only the last).
     */
    public final RepeatedFieldIterator repeated(int fieldId, RepeatedFieldIterator iterator) {
        int slot = slot(fieldId);
        int count = slot == ABSENT ? 0 : counts[slot];
        iterator.reset(data, count == 0 ? end : firstFieldStarts[slot], end, fieldId, count);
        return iterator;
    }

    /**
     * Points {@code iterator} at every element of a repeated scalar field, packed or not.
     *
     * @param elementWireType {@link ProtoWire#WIRE_TYPE_VARINT}, {@code FIXED32} or {@code FIXED64}
     */
    protected final RepeatedScalarIterator repeatedScalar(int fieldId, int elementWireType,
                                                          RepeatedScalarIterator iterator) {
        int slot = slot(fieldId);
        int count = slot == ABSENT ? 0 : counts[slot];
        iterator.reset(data, count == 0 ? end : firstFieldStarts[slot], end, fieldId, count,
                elementWireType);
        return iterator;
    }
}
