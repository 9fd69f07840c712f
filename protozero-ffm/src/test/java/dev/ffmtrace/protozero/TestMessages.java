package dev.ffmtrace.protozero;

import java.util.HexFormat;

/** Hand-written message writers with TracePacket's and TrackEvent's field numbers. */
final class TestMessages {
    private TestMessages() {
    }

    static final class Packet extends Message {
        static final MessageFactory<Packet> FACTORY = MessageFactory.of(Packet::new);
        static final int TIMESTAMP = 8;
        static final int TRUSTED_PACKET_SEQUENCE_ID = 10;
        static final int TRACK_EVENT = 11;

        void setTimestamp(long value) {
            appendVarInt(TIMESTAMP, value);
        }

        void setTrustedPacketSequenceId(int value) {
            appendUInt32(TRUSTED_PACKET_SEQUENCE_ID, value);
        }

        Event setTrackEvent() {
            return beginNestedMessage(TRACK_EVENT, Event.FACTORY);
        }
    }

    static final class Event extends Message {
        static final MessageFactory<Event> FACTORY = MessageFactory.of(Event::new);
        static final int TYPE = 9;
        static final int TRACK_UUID = 11;
        static final int NAME = 23;
        static final int DEBUG_ANNOTATIONS = 4;

        void setType(int value) {
            appendInt32(TYPE, value);
        }

        void setTrackUuid(long value) {
            appendVarInt(TRACK_UUID, value);
        }

        void setName(String value) {
            appendString(NAME, value);
        }

        Event addChild() {
            return beginNestedMessage(DEBUG_ANNOTATIONS, FACTORY);
        }
    }

    static byte[] hex(String hex) {
        return HexFormat.of().parseHex(hex);
    }

    static String hex(byte[] bytes) {
        return HexFormat.of().formatHex(bytes);
    }
}
