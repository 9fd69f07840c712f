package dev.ffmtrace.tracing.service;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Arrays;
import java.util.HexFormat;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The rules of {@link PacketValidator} on hand-encoded packets: what it lets through
 * (every wire type, anything nested, the producer's own loss), and what it refuses. A
 * packet in fragments is {@link ProducerPacketTest}'s; the cross-process case is
 * {@link HostileProducerTest}.
 */
class PacketValidatorTest {
    /**
     * The verdict on the packet {@code hex}, held in an array between a trusted field's
     * tags: bytes outside the packet must not be read.
     */
    private static int validate(String hex) {
        byte[] packet = HexFormat.of().parseHex(hex);
        byte[] array = new byte[packet.length + 2];
        Arrays.fill(array, (byte) 0x18); // trusted_uid's tag
        System.arraycopy(packet, 0, array, 1, packet.length);
        return new PacketValidator().validate(array, 1, 1 + packet.length);
    }

    @ParameterizedTest(name = "{0}: {1}")
    @CsvSource({
        "empty, ''",
        "timestamp (varint), 4001",
        "fixed64 field 30, f1010102030405060708",
        "fixed32 field 30, f50101020304",
        "track_event holding malformed bytes (nested: not checked), 5a03ffffff",
        "previous_packet_dropped 0, d00200",
    })
    void validPackets(String what, String hex) {
        assertEquals(0, validate(hex), what);
    }

    @Test
    void theProducersOwnLossIsReturned() {
        assertEquals(1, validate("d00201"), "PRESENT, as older writers' bool");
        assertEquals(257, validate("d0028102"), "PRESENT | SMB_FULL");
        assertEquals(257, validate("d00201 4001 d0028102".replace(" ", "")), "several, or-ed");
    }

    /**
     * Longer packets: a field after a hundred others, or after a payload the validator
     * skips, is checked all the same.
     */
    @Test
    void longPacketsAreCheckedToTheirEnd() {
        String timestamps = "4001".repeat(100);
        String trackEvent = "5a" + "8102" + "00".repeat(257);
        assertEquals(0, validate(timestamps + trackEvent + "4001"));
        assertEquals(PacketValidator.INVALID, validate(timestamps + "1800"), "trusted_uid after 100 fields");
        assertEquals(PacketValidator.INVALID, validate(trackEvent + "1800"), "trusted_uid after a long payload");
        assertEquals(PacketValidator.INVALID, validate(trackEvent + "5a05"), "a length past the end");
    }

    @ParameterizedTest(name = "{0}: {1}")
    @CsvSource({
        "trusted_uid, 1800",
        "trusted_packet_sequence_id, 5001",
        "trusted_pid, f80401",
        "trace_config, 8a0200",
        "trace_stats, 9a0200",
        "synchronization_marker, a20200",
        "compressed_packets, 920300",
        "service_event, aa0400",
        "machine_id, 900601",
        "trace_provenance, e20700",
        "protovms, ea0700",
        "previous_packet_dropped OVERWRITE, d00241",
        "previous_packet_dropped SMB_FULL without PRESENT, d0028002",
        "previous_packet_dropped over 32 bits, d0028180808010",
        "previous_packet_dropped length-delimited, d2020101",
        "length past the end, 5a0548",
        "truncated varint, 4080",
        "varint over 10 bytes, 40ffffffffffffffffffff01",
        "truncated fixed32, f50101",
        "start group, 43",
        "end group, 44",
        "wire type 6, 46",
        "field id 0, 0001",
    })
    void invalidPackets(String what, String hex) {
        assertEquals(PacketValidator.INVALID, validate(hex), what);
    }
}
