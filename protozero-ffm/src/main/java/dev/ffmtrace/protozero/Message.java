package dev.ffmtrace.protozero;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.Objects;

/**
 * The base of every ProtoZero message writer: append-only, serializing each field
 * straight into a {@link ScatteredStreamWriter} as it is set.
 *
 * <p>Fields are written in call order; nothing stops a field from being written twice
 * (a reader takes the last one). A nested message is begun with
 * {@link #beginNestedMessage}: its tag is written and 4 bytes are reserved for its
 * length, which is back-filled when the nested message is finalized, when this message
 * writes its next field or begins another nested message, or when this message is
 * finalized. A nested body of at most {@value ProtoWire#MAX_ONE_BYTE_MESSAGE_LENGTH}
 * bytes that lies, with its size field, wholly in the current slice is moved back 3
 * bytes and gets a 1-byte length; any other gets the 4-byte redundant varint. The
 * output is byte-for-byte that of Perfetto's C++ ProtoZero for the same slices.
 *
 * <p>Nested message objects come from an arena owned by the root message and are
 * reused, one per nesting level and type: after warm-up writing a message tree
 * allocates nothing. A reference to a nested message is valid only until it is
 * finalized; the object may later be handed out again for another nested message of
 * the same type and depth. Nesting is bounded at {@value #MAX_NESTING_DEPTH} levels
 * below the root.
 *
 * <p>A message is {@link AutoCloseable}: closing ends it (see {@link #close()}), so a
 * try-with-resources block finalizes what it wrote, e.g. a trace writer's packet.
 *
 * <p>Not thread-safe.
 */
public abstract class Message implements AutoCloseable {
    /**
     * Whoever started a root message and must hear of its end: a trace writer, whose
     * packet is finished (size field, chunk bookkeeping) rather than just finalized.
     */
    @FunctionalInterface
    public interface Owner {
        /** {@code root}, started with this owner, was closed while open. */
        void rootClosed(Message root);
    }

    /**
     * Nesting levels allowed below a root message. Perfetto's deepest trace protos
     * (debug annotations, nested values) stay well within it; protobuf-java parses at
     * most 100 levels by default, so every tree written here parses there.
     */
    public static final int MAX_NESTING_DEPTH = 32;

    private static final byte OPEN = 0;
    private static final byte HAS_NESTED = 1;
    private static final byte FINALIZED = 2;
    private static final byte DETACHED = 3;
    /** A size-field slice id no slice has: the writer numbers slices from 0 up. */
    private static final long REDIRECTED = -1;

    private ScatteredStreamWriter writer;
    private Owner owner;
    private MessageArena arena;
    private Message nestedMessage;
    private MemorySegment sizeField;
    private long sizeFieldOffset;
    private long sizeFieldSliceId;
    private long bodyStart;
    private long finalSize;
    private int depth;
    private boolean arenaOwned;
    private byte state = DETACHED;

    protected Message() {
    }

    /**
     * Starts this message as a root: no length prefix, fields go to {@code writer} from
     * its current position, and {@link #size()} counts from there (a trace writer
     * reserves its packet header before this call). Any previous content is abandoned.
     */
    public final void reset(ScatteredStreamWriter writer) {
        reset(writer, null);
    }

    /**
     * Like {@link #reset(ScatteredStreamWriter)}, for a root whose {@link #close()} goes to
     * {@code owner} instead of finalizing it.
     */
    public final void reset(ScatteredStreamWriter writer, Owner owner) {
        if (writer == null) {
            throw new NullPointerException("writer");
        }
        if (arenaOwned) {
            throw new IllegalStateException("a nested message cannot be reset as a root: "
                    + getClass().getName());
        }
        if (arena == null) {
            arena = new MessageArena();
        }
        this.writer = writer;
        this.owner = owner;
        this.depth = 0;
        this.sizeField = null;
        start();
    }

    private void initNested(ScatteredStreamWriter writer, MessageArena arena, int depth,
                            long sizeFieldOffset) {
        this.writer = writer;
        this.owner = null;
        this.arena = arena;
        this.depth = depth;
        this.arenaOwned = true;
        this.sizeField = writer.slice();
        this.sizeFieldOffset = sizeFieldOffset;
        this.sizeFieldSliceId = writer.sliceId();
        start();
    }

    private void start() {
        nestedMessage = null;
        finalSize = 0;
        bodyStart = writer.writtenSoFar();
        state = OPEN;
    }

    // ---------------------------------------------------------------- scalars

    /** A varint field of {@code value} read as unsigned 64-bit: uint64 or int64. */
    public final void appendVarInt(int fieldId, long value) {
        beforeWrite();
        writer.writeTagAndVarInt(tag(fieldId, ProtoWire.WIRE_TYPE_VARINT), value);
    }

    /** An int32 field; negative values are sign-extended to 10 bytes as protobuf does. */
    public final void appendInt32(int fieldId, int value) {
        appendVarInt(fieldId, value);
    }

    /** A uint32 field: {@code value} is read as unsigned. */
    public final void appendUInt32(int fieldId, int value) {
        appendVarInt(fieldId, Integer.toUnsignedLong(value));
    }

    public final void appendBool(int fieldId, boolean value) {
        appendVarInt(fieldId, value ? 1 : 0);
    }

    /** An sint32 field (zigzag). */
    public final void appendSInt32(int fieldId, int value) {
        appendVarInt(fieldId, Integer.toUnsignedLong(ProtoWire.zigZagEncode32(value)));
    }

    /** An sint64 field (zigzag). */
    public final void appendSInt64(int fieldId, long value) {
        appendVarInt(fieldId, ProtoWire.zigZagEncode64(value));
    }

    /** A fixed32 or sfixed32 field. */
    public final void appendFixed32(int fieldId, int value) {
        beforeWrite();
        writer.writeVarInt(tag(fieldId, ProtoWire.WIRE_TYPE_FIXED32));
        writer.writeFixed32(value);
    }

    /** A fixed64 or sfixed64 field. */
    public final void appendFixed64(int fieldId, long value) {
        beforeWrite();
        writer.writeVarInt(tag(fieldId, ProtoWire.WIRE_TYPE_FIXED64));
        writer.writeFixed64(value);
    }

    public final void appendFloat(int fieldId, float value) {
        appendFixed32(fieldId, Float.floatToRawIntBits(value));
    }

    public final void appendDouble(int fieldId, double value) {
        appendFixed64(fieldId, Double.doubleToRawLongBits(value));
    }

    // ------------------------------------------------------ length-delimited

    /**
     * A string field, encoded to UTF-8 straight into the stream. Unpaired surrogates are
     * written as {@code '?'}, as protobuf-java does.
     */
    public final void appendString(int fieldId, String value) {
        beforeWrite();
        long tag = tag(fieldId, ProtoWire.WIRE_TYPE_LENGTH_DELIMITED);
        if (value.length() <= Utf8.MAX_CHARS_FOR_ONE_BYTE_LENGTH && writer.writeShortString(tag, value)) {
            return;
        }
        long scan = Utf8.scan(value);
        writer.writeTagAndVarInt(tag, Utf8.encodedLength(scan));
        writer.writeUtf8(value, scan);
    }

    public final void appendBytes(int fieldId, byte[] value) {
        appendBytes(fieldId, value, 0, value.length);
    }

    public final void appendBytes(int fieldId, byte[] value, int offset, int length) {
        Objects.checkFromIndexSize(offset, length, value.length);
        beforeWrite();
        writer.writeTagAndVarInt(tag(fieldId, ProtoWire.WIRE_TYPE_LENGTH_DELIMITED), length);
        writer.writeBytes(value, offset, length);
    }

    /** A bytes field holding all of {@code value}. */
    public final void appendBytes(int fieldId, MemorySegment value) {
        long length = value.byteSize();
        checkLength(length);
        beforeWrite();
        writer.writeTagAndVarInt(tag(fieldId, ProtoWire.WIRE_TYPE_LENGTH_DELIMITED), length);
        writer.writeBytes(value, 0, length);
    }

    /**
     * Appends {@code value} as it is: bytes that are already encoded fields of this message
     * (Perfetto's {@code AppendRawProtoBytes}), e.g. a state kept serialised.
     */
    public final void appendRawProtoBytes(byte[] value, int offset, int length) {
        Objects.checkFromIndexSize(offset, length, value.length);
        beforeWrite();
        writer.writeBytes(value, offset, length);
    }

    /** A bytes field holding the remaining bytes of {@code value}; its position is not moved. */
    public final void appendBytes(int fieldId, ByteBuffer value) {
        beforeWrite();
        writer.writeTagAndVarInt(tag(fieldId, ProtoWire.WIRE_TYPE_LENGTH_DELIMITED),
                value.remaining());
        writer.writeBytes(value);
    }

    // ------------------------------------------------------------- packed

    /** A packed repeated field of varints (uint64/int64 values). */
    public final void appendPackedVarInts(int fieldId, long[] values, int offset, int count) {
        Objects.checkFromIndexSize(offset, count, values.length);
        long length = 0;
        for (int i = offset; i < offset + count; i++) {
            length += ProtoWire.varIntSize(values[i]);
        }
        beginPacked(fieldId, length);
        for (int i = offset; i < offset + count; i++) {
            writer.writeVarInt(values[i]);
        }
    }

    /** A packed repeated int32 field; negative values take 10 bytes each. */
    public final void appendPackedInt32s(int fieldId, int[] values, int offset, int count) {
        Objects.checkFromIndexSize(offset, count, values.length);
        long length = 0;
        for (int i = offset; i < offset + count; i++) {
            length += ProtoWire.varIntSize(values[i]);
        }
        beginPacked(fieldId, length);
        for (int i = offset; i < offset + count; i++) {
            writer.writeVarInt(values[i]);
        }
    }

    /** A packed repeated uint32 field. */
    public final void appendPackedUInt32s(int fieldId, int[] values, int offset, int count) {
        Objects.checkFromIndexSize(offset, count, values.length);
        long length = 0;
        for (int i = offset; i < offset + count; i++) {
            length += ProtoWire.varIntSize(Integer.toUnsignedLong(values[i]));
        }
        beginPacked(fieldId, length);
        for (int i = offset; i < offset + count; i++) {
            writer.writeVarInt(Integer.toUnsignedLong(values[i]));
        }
    }

    /** A packed repeated sint64 field (zigzag). */
    public final void appendPackedSInt64s(int fieldId, long[] values, int offset, int count) {
        Objects.checkFromIndexSize(offset, count, values.length);
        long length = 0;
        for (int i = offset; i < offset + count; i++) {
            length += ProtoWire.varIntSize(ProtoWire.zigZagEncode64(values[i]));
        }
        beginPacked(fieldId, length);
        for (int i = offset; i < offset + count; i++) {
            writer.writeVarInt(ProtoWire.zigZagEncode64(values[i]));
        }
    }

    /** A packed repeated sint32 field (zigzag). */
    public final void appendPackedSInt32s(int fieldId, int[] values, int offset, int count) {
        Objects.checkFromIndexSize(offset, count, values.length);
        long length = 0;
        for (int i = offset; i < offset + count; i++) {
            length += ProtoWire.varIntSize(Integer.toUnsignedLong(ProtoWire.zigZagEncode32(values[i])));
        }
        beginPacked(fieldId, length);
        for (int i = offset; i < offset + count; i++) {
            writer.writeVarInt(Integer.toUnsignedLong(ProtoWire.zigZagEncode32(values[i])));
        }
    }

    /** A packed repeated fixed32/sfixed32 field. */
    public final void appendPackedFixed32s(int fieldId, int[] values, int offset, int count) {
        Objects.checkFromIndexSize(offset, count, values.length);
        beginPacked(fieldId, (long) count * Integer.BYTES);
        for (int i = offset; i < offset + count; i++) {
            writer.writeFixed32(values[i]);
        }
    }

    /** A packed repeated fixed64/sfixed64 field. */
    public final void appendPackedFixed64s(int fieldId, long[] values, int offset, int count) {
        Objects.checkFromIndexSize(offset, count, values.length);
        beginPacked(fieldId, (long) count * Long.BYTES);
        for (int i = offset; i < offset + count; i++) {
            writer.writeFixed64(values[i]);
        }
    }

    public final void appendPackedFloats(int fieldId, float[] values, int offset, int count) {
        Objects.checkFromIndexSize(offset, count, values.length);
        beginPacked(fieldId, (long) count * Float.BYTES);
        for (int i = offset; i < offset + count; i++) {
            writer.writeFixed32(Float.floatToRawIntBits(values[i]));
        }
    }

    public final void appendPackedDoubles(int fieldId, double[] values, int offset, int count) {
        Objects.checkFromIndexSize(offset, count, values.length);
        beginPacked(fieldId, (long) count * Double.BYTES);
        for (int i = offset; i < offset + count; i++) {
            writer.writeFixed64(Double.doubleToRawLongBits(values[i]));
        }
    }

    private void beginPacked(int fieldId, long length) {
        checkLength(length);
        beforeWrite();
        writer.writeTagAndVarInt(tag(fieldId, ProtoWire.WIRE_TYPE_LENGTH_DELIMITED), length);
    }

    // ------------------------------------------------------------- nesting

    /**
     * Begins a nested message in field {@code fieldId} and returns it. The object comes
     * from the root's arena; it stays valid until it is finalized, which happens at the
     * latest when this message writes another field or is finalized.
     *
     * @throws IllegalStateException past {@value #MAX_NESTING_DEPTH} levels of nesting
     */
    public final <T extends Message> T beginNestedMessage(int fieldId, MessageFactory<T> factory) {
        beforeWrite();
        int childDepth = depth + 1;
        if (childDepth > MAX_NESTING_DEPTH) {
            throw new IllegalStateException("nested messages deeper than " + MAX_NESTING_DEPTH
                    + " levels below the root (field " + fieldId + " of "
                    + getClass().getName() + ")");
        }
        long sizeFieldAt =
                writer.writeTagAndReserveSizeField(tag(fieldId, ProtoWire.WIRE_TYPE_LENGTH_DELIMITED));
        T child = arena.obtain(childDepth, factory);
        ((Message) child).initNested(writer, arena, childDepth, sizeFieldAt);
        nestedMessage = child;
        state = HAS_NESTED;
        return child;
    }

    /**
     * Finalizes this message: finalizes any open nested message, back-fills this
     * message's size field if it is nested, and makes further writes fail. Calling it
     * again returns the same size.
     *
     * @return the size of this message's body in bytes
     */
    public final long finalizeMessage() {
        if (state != OPEN) {
            if (state == FINALIZED) {
                return finalSize;
            }
            if (state == DETACHED) {
                throw detached();
            }
            endNestedMessage();
        }
        long size = writer.writtenSoFar() - bodyStart;
        if (sizeField != null) {
            writeSizeField(size);
        }
        finalSize = size;
        state = FINALIZED;
        return size;
    }

    /** Back-fills this nested message's size field; kept apart so that finalizing a root stays small enough to inline. */
    private void writeSizeField(long size) {
        if (size > ProtoWire.MAX_MESSAGE_LENGTH) {
            throw new IllegalStateException("nested message of " + size
                    + " bytes exceeds the " + ProtoWire.MAX_MESSAGE_LENGTH
                    + " bytes a 4-byte size field holds: " + getClass().getName());
        }
        // Same slice as the size field means the writer has not moved since the
        // reservation, so the body follows the size field contiguously.
        if (size <= ProtoWire.MAX_ONE_BYTE_MESSAGE_LENGTH && sizeFieldSliceId == writer.sliceId()) {
            writer.compactShortMessage(sizeFieldOffset, (int) size);
        } else {
            ProtoWire.writeRedundantVarInt(sizeField, sizeFieldOffset, (int) size);
        }
        sizeField = null;
    }

    private void endNestedMessage() {
        nestedMessage.finalizeMessage();
        nestedMessage = null;
        state = OPEN;
    }

    /**
     * Ends this message: a root started with an {@link Owner} is handed to it (a trace
     * writer finishes its packet), any other message is finalized. Closing a message that
     * is already finalized, or was never started, does nothing.
     */
    @Override
    public final void close() {
        if (state == FINALIZED || state == DETACHED) {
            return;
        }
        if (owner != null) {
            owner.rootClosed(this);
        } else {
            finalizeMessage();
        }
    }

    /** Whether {@link #finalizeMessage()} has run since the last reset. */
    public final boolean isFinalized() {
        return state == FINALIZED;
    }

    /**
     * Bytes of this message's body written so far, nested messages included (an open
     * nested message counts with its 4 reserved size bytes until it is compacted); the
     * final body size once finalized.
     */
    public final long size() {
        if (state == FINALIZED) {
            return finalSize;
        }
        if (state == DETACHED) {
            throw detached();
        }
        return writer.writtenSoFar() - bodyStart;
    }

    // ------------------------------------------------- size-field redirection

    /** The open nested message of this message, or null. */
    public final Message nestedMessage() {
        return nestedMessage;
    }

    /** The segment holding this message's pending size field; null for a root or once finalized. */
    public final MemorySegment sizeField() {
        return sizeField;
    }

    /** Offset of the pending size field in {@link #sizeField()}. */
    public final long sizeFieldOffset() {
        return sizeFieldOffset;
    }

    /**
     * Makes this open nested message write its size, as a 4-byte redundant varint, to
     * {@code offset} of {@code patch} instead of its reserved bytes. A redirected message
     * is never compacted: its body no longer follows its size field.
     */
    public final void redirectSizeField(MemorySegment patch, long offset) {
        if (sizeField == null) {
            throw new IllegalStateException("no pending size field to redirect: the message is "
                    + (state == FINALIZED ? "finalized" : "a root") + " (" + getClass().getName() + ")");
        }
        Objects.checkFromIndexSize(offset, ProtoWire.MESSAGE_LENGTH_FIELD_SIZE, patch.byteSize());
        sizeField = patch;
        sizeFieldOffset = offset;
        sizeFieldSliceId = REDIRECTED;
    }

    /**
     * Hands to {@code redirector}, outermost first, every open message from this one down
     * the chain of open nested messages whose size field lies in the writer's current
     * slice. A {@link ScatteredStreamWriter.Delegate} calls it on its root message from
     * {@code newSlice}, before giving away the slice being handed back.
     *
     * @return the number of messages handed to {@code redirector}
     */
    public final int redirectSizeFields(SizeFieldRedirector redirector) {
        int count = 0;
        for (Message m = this; m != null; m = m.nestedMessage) {
            if (m.sizeField != null && m.sizeFieldSliceId == m.writer.sliceId()) {
                redirector.redirect(m);
                if (m.sizeFieldSliceId != REDIRECTED) {
                    throw new IllegalStateException("the redirector did not redirect the size field of "
                            + m.getClass().getName());
                }
                count++;
            }
        }
        return count;
    }

    // ---------------------------------------------------------------- checks

    private void beforeWrite() {
        if (state != OPEN) {
            prepareForWriteSlow();
        }
    }

    private void prepareForWriteSlow() {
        if (state == HAS_NESTED) {
            endNestedMessage();
        } else if (state == FINALIZED) {
            throw new IllegalStateException("write to a finalized message: " + getClass().getName());
        } else {
            throw detached();
        }
    }

    private IllegalStateException detached() {
        return new IllegalStateException("message is not attached to a writer; use HeapBuffered, "
                + "reset(ScatteredStreamWriter) or beginNestedMessage: " + getClass().getName());
    }

    private static long tag(int fieldId, int wireType) {
        if (fieldId <= 0 || fieldId > ProtoWire.MAX_FIELD_ID) {
            throw new IllegalArgumentException("field id out of range 1.." + ProtoWire.MAX_FIELD_ID
                    + ": " + fieldId);
        }
        return ProtoWire.makeTag(fieldId, wireType);
    }

    private static void checkLength(long length) {
        if (length > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("field of " + length + " bytes is too long for protobuf");
        }
    }
}
