package dev.ffmtrace.tracing.service;

import dev.ffmtrace.protozero.Message;
import dev.ffmtrace.protozero.MessageFactory;

/** A minimal packet type for writer tests: bytes in field 1, nested packets in field 2. */
final class TestPacket extends Message {
    static final MessageFactory<TestPacket> FACTORY = MessageFactory.of(TestPacket::new);

    TestPacket payload(byte[] bytes) {
        appendBytes(1, bytes);
        return this;
    }

    TestPacket nested() {
        return beginNestedMessage(2, FACTORY);
    }
}
