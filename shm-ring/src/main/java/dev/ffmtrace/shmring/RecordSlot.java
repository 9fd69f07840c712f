package dev.ffmtrace.shmring;

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
        return headerOffset + SharedRingBufferDescriptor.RECORD_HEADER_SIZE;
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

/** The padding before {@link RecordSlotFields}; see {@link RecordSlot}. */
abstract class RecordSlotLhsPadding {
    byte p000, p001, p002, p003, p004, p005, p006, p007, p008, p009, p010, p011, p012, p013, p014, p015;
    byte p016, p017, p018, p019, p020, p021, p022, p023, p024, p025, p026, p027, p028, p029, p030, p031;
    byte p032, p033, p034, p035, p036, p037, p038, p039, p040, p041, p042, p043, p044, p045, p046, p047;
    byte p048, p049, p050, p051, p052, p053, p054, p055, p056, p057, p058, p059, p060, p061, p062, p063;
    byte p064, p065, p066, p067, p068, p069, p070, p071, p072, p073, p074, p075, p076, p077, p078, p079;
    byte p080, p081, p082, p083, p084, p085, p086, p087, p088, p089, p090, p091, p092, p093, p094, p095;
    byte p096, p097, p098, p099, p100, p101, p102, p103, p104, p105, p106, p107, p108, p109, p110, p111;
    byte p112, p113, p114, p115, p116, p117, p118, p119, p120, p121, p122, p123, p124, p125, p126, p127;
}

/** A {@link RecordSlot}'s state, between its two paddings. */
abstract class RecordSlotFields extends RecordSlotLhsPadding {
    static final int IDLE = 0;
    static final int WRITING = 1;
    static final int READING = 2;

    final SharedRingBuffer owner;
    final MemorySegment buffer;
    int state = IDLE;
    long headerOffset;
    long length;
    long stride;
    /**
     * The reader's slot only: the read position last found uncommitted, -1 after a record
     * was read, and when it was first found so (for the uncommitted-record timeout). Kept
     * here, written by the reader alone, rather than in the buffer, whose fields writers
     * read on every record.
     */
    long stalledPosition = -1;
    long stalledSinceNanos;

    RecordSlotFields(SharedRingBuffer owner, MemorySegment buffer) {
        this.owner = owner;
        this.buffer = buffer;
    }
}
