package dev.ffmtrace.tracing.trackevent;

import dev.ffmtrace.perfetto.protos.DebugAnnotation;
import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.perfetto.protos.TrackEvent;
import dev.ffmtrace.protozero.ProtoWire;

/**
 * The one encoder of a TrackEvent's common fields (type, track, category, name), by hand
 * into a buffer one writer reuses. A simple event's body is appended whole as the packet's
 * {@code track_event} bytes, the same bytes as the nested message without reserving and
 * compacting a size field; one numeric debug annotation goes on in the buffer; an event
 * with further fields continues the bytes in the nested message.
 */
final class EventBodyEncoder {
    // One-byte tags: the fields encoded by hand are all below 16.
    private static final byte TYPE_TAG =
            (byte) ProtoWire.makeTag(TrackEvent.TYPE_FIELD_NUMBER, ProtoWire.WIRE_TYPE_VARINT);
    private static final byte TRACK_UUID_TAG =
            (byte) ProtoWire.makeTag(TrackEvent.TRACK_UUID_FIELD_NUMBER, ProtoWire.WIRE_TYPE_VARINT);
    private static final byte CATEGORY_IIDS_TAG =
            (byte) ProtoWire.makeTag(TrackEvent.CATEGORY_IIDS_FIELD_NUMBER, ProtoWire.WIRE_TYPE_VARINT);
    private static final byte NAME_IID_TAG =
            (byte) ProtoWire.makeTag(TrackEvent.NAME_IID_FIELD_NUMBER, ProtoWire.WIRE_TYPE_VARINT);
    private static final byte DEBUG_ANNOTATIONS_TAG =
            (byte) ProtoWire.makeTag(TrackEvent.DEBUG_ANNOTATIONS_FIELD_NUMBER, ProtoWire.WIRE_TYPE_LENGTH_DELIMITED);
    private static final byte ANNOTATION_NAME_IID_TAG =
            (byte) ProtoWire.makeTag(DebugAnnotation.NAME_IID_FIELD_NUMBER, ProtoWire.WIRE_TYPE_VARINT);
    /** The value tags {@link #appendAnnotated} takes. */
    static final byte INT_VALUE_TAG =
            (byte) ProtoWire.makeTag(DebugAnnotation.INT_VALUE_FIELD_NUMBER, ProtoWire.WIRE_TYPE_VARINT);
    static final byte BOOL_VALUE_TAG =
            (byte) ProtoWire.makeTag(DebugAnnotation.BOOL_VALUE_FIELD_NUMBER, ProtoWire.WIRE_TYPE_VARINT);
    static final byte DOUBLE_VALUE_TAG =
            (byte) ProtoWire.makeTag(DebugAnnotation.DOUBLE_VALUE_FIELD_NUMBER, ProtoWire.WIRE_TYPE_FIXED64);

    /**
     * Type, track uuid, category iid and name iid, each a tag and a varint, then possibly
     * one debug annotation (tag, length, name iid, value).
     */
    private final byte[] body = new byte[2 + 3 * (1 + 10) + 2 + 2 * (1 + 10)];
    /** The sequence's default track, whose events omit {@code track_uuid}. */
    private final Track defaultTrack;

    EventBodyEncoder(Track defaultTrack) {
        this.defaultTrack = defaultTrack;
    }

    /**
     * Encodes the common fields; a category or name iid of 0 (or, for the name, a negative
     * one) writes none. Returns the body's length so far.
     */
    int encode(TrackEvent.Type type, Track track, long categoryIid, long nameIid) {
        byte[] body = this.body;
        body[0] = TYPE_TAG;
        body[1] = (byte) type.number();         // every Type number is below 128: a one-byte varint
        int n = 2;
        if (track != defaultTrack) {
            body[n++] = TRACK_UUID_TAG;
            n = ProtoWire.writeVarInt(body, n, track.uuid());
        }
        if (categoryIid != 0) {
            body[n++] = CATEGORY_IIDS_TAG;
            n = ProtoWire.writeVarInt(body, n, categoryIid);
        }
        if (nameIid > 0) {
            body[n++] = NAME_IID_TAG;
            n = ProtoWire.writeVarInt(body, n, nameIid);
        }
        return n;
    }

    /** Appends the first {@code length} bytes of the body to {@code packet} as its {@code track_event}. */
    void append(TracePacket packet, int length) {
        packet.appendBytes(TracePacket.TRACK_EVENT_FIELD_NUMBER, body, 0, length);
    }

    /**
     * Appends to the body at {@code n} a debug annotation named by {@code annotationIid}
     * whose value is the varint or fixed64 {@code value} under {@code valueTag}, then the
     * whole body to {@code packet}.
     */
    void appendAnnotated(TracePacket packet, int n, long annotationIid, byte valueTag, long value, boolean fixed64) {
        byte[] body = this.body;
        body[n++] = DEBUG_ANNOTATIONS_TAG;
        int lengthAt = n++;
        body[n++] = ANNOTATION_NAME_IID_TAG;
        n = ProtoWire.writeVarInt(body, n, annotationIid);
        body[n++] = valueTag;
        if (fixed64) {
            for (int i = 0; i < Long.BYTES; i++) {
                body[n++] = (byte) (value >>> (8 * i));
            }
        } else {
            n = ProtoWire.writeVarInt(body, n, value);
        }
        body[lengthAt] = (byte) (n - lengthAt - 1);
        packet.appendBytes(TracePacket.TRACK_EVENT_FIELD_NUMBER, body, 0, n);
    }

    /**
     * Starts the packet's {@code track_event} as a nested message holding the first
     * {@code length} bytes of the body, for the fields that follow them through the
     * generated writer.
     */
    TrackEvent open(TracePacket packet, int length) {
        TrackEvent event = packet.setTrackEvent();
        event.appendRawProtoBytes(body, 0, length);
        return event;
    }
}
