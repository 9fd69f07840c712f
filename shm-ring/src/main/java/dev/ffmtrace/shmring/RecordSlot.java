package dev.ffmtrace.shmring;

import static dev.ffmtrace.shmring.abi.SharedRingBufferDescriptor.RECORD_HEADER_SIZE;

import java.lang.foreign.MemorySegment;

/**
 * A reusable handle on one record of a {@link SharedRingBuffer}: the record being
 * written between {@code beginWrite} and {@code endWrite}, or being read between
 * {@code beginRead} and {@code endRead}.
 *
 * <p>The payload is {@link #length()} bytes at {@link #offset()} in {@link #buffer()},
 * the ring seen twice back to back, so a payload is contiguous even where it wraps.
 * Handing out buffer and offset instead of a fresh slice keeps the write and read paths
 * free of allocation; {@link #payload()} makes the slice for callers that do not mind.
 * A slot belongs to one buffer and one thread at a time; every writer thread needs its
 * own.
 *
 * <p>A payload being read lives in memory the other process can still write: copy what
 * must not change, and bound every offset read from it.
 *
 * <p>Each slot is written on every record by its own thread, so its fields are padded by
 * 128 bytes on both sides (superclass fields are laid out first): slots allocated next to
 * each other, or next to the buffer whose fields every writer reads, would otherwise share
 * a cache line (or an adjacent-line prefetch pair) and bounce it between cores per record.
 */
public final class RecordSlot extends RecordSlotFields {
    byte p128, p129, p130, p131, p132, p133, p134, p135, p136, p137, p138, p139, p140, p141, p142, p143;
    byte p144, p145, p146, p147, p148, p149, p150, p151, p152, p153, p154, p155, p156, p157, p158, p159;
    byte p160, p161, p162, p163, p164, p165, p166, p167, p168, p169, p170, p171, p172, p173, p174, p175;
    byte p176, p177, p178, p179, p180, p181, p182, p183, p184, p185, p186, p187, p188, p189, p190, p191;
    byte p192, p193, p194, p195, p196, p197, p198, p199, p200, p201, p202, p203, p204, p205, p206, p207;
    byte p208, p209, p210, p211, p212, p213, p214, p215, p216, p217, p218, p219, p220, p221, p222, p223;
    byte p224, p225, p226, p227, p228, p229, p230, p231, p232, p233, p234, p235, p236, p237, p238, p239;
    byte p240, p241, p242, p243, p244, p245, p246, p247, p248, p249, p250, p251, p252, p253, p254, p255;

    RecordSlot(SharedRingBuffer owner, MemorySegment buffer) {
        super(owner, buffer);
    }

    /** Both copies of the ring; the payload is a part of it. */
    public MemorySegment buffer() {
        return buffer;
    }

    /** Offset of the first payload byte in {@link #buffer()}. */
    public long offset() {
        checkActive();
        return headerOffset + RECORD_HEADER_SIZE;
    }

    /** Payload length in bytes, at least 1. */
    public long length() {
        checkActive();
        return length;
    }

    /** A new slice over the payload (allocates; the hot paths use buffer, offset and length). */
    public MemorySegment payload() {
        return buffer.asSlice(offset(), length);
    }

    /** Whether the slot holds a record between a begin and its end. */
    public boolean isActive() {
        return state != IDLE;
    }

    private void checkActive() {
        if (state == IDLE) {
            throw new IllegalStateException("record slot holds no record (no successful beginWrite or beginRead)");
        }
    }
}

/** A {@link RecordSlot}'s state, between its two paddings. */
abstract class RecordSlotFields extends LeadingPadding {
    static final int IDLE = 0;
    static final int WRITING = 1;
    static final int READING = 2;

    final SharedRingBuffer owner;
    final MemorySegment buffer;
    int state = IDLE;
    long headerOffset;
    long length;
    long stride;

    RecordSlotFields(SharedRingBuffer owner, MemorySegment buffer) {
        this.owner = owner;
        this.buffer = buffer;
    }
}
