package dev.ffmtrace.tracing.service;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.ffmtrace.tracing.buffer.TracePacketView;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.HexFormat;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The rules of {@link PacketValidator} on hand-encoded packets: what it lets through
 * (every wire type, anything nested, the producer's own loss), and what it refuses, on a
 * packet whole or in fragments. The cross-process case is {@link HostileProducerTest}.
 */
class PacketValidatorTest {
    /**
     * The verdict on the packet {@code hex}, the same whether the buffer holds it whole or
     * in two or three fragments, cut anywhere (inside a tag, a varint, a length), with the
     * fragments in reverse order in the buffer and a trusted field's tag between and after
     * them: bytes outside the fragments must not be read.
     */
    private static int validate(String hex) {
        byte[] packet = HexFormat.of().parseHex(hex);
        int whole = validate(packet, new int[0]);
        for (int cut = 0; cut <= packet.length; cut++) {
            assertEquals(whole, validate(packet, new int[] {cut}), "cut at " + cut);
            for (int second = cut; second <= packet.length; second++) {
                assertEquals(whole, validate(packet, new int[] {cut, second}), "cut at " + cut + " and " + second);
            }
        }
        return whole;
    }

    private static int validate(byte[] packet, int[] cuts) {
        int fragments = cuts.length + 1;
        long[] offsets = new long[fragments];
        int[] sizes = new int[fragments];
        byte[] buffer = new byte[packet.length + 2 * fragments + 1];
        Arrays.fill(buffer, (byte) 0x18); // trusted_uid's tag
        int at = 1;
        for (int i = fragments - 1; i >= 0; i--) {
            int from = i == 0 ? 0 : cuts[i - 1];
            int to = i == cuts.length ? packet.length : cuts[i];
            System.arraycopy(packet, from, buffer, at, to - from);
            offsets[i] = at;
            sizes[i] = to - from;
            at += to - from + 2;
        }
        return new PacketValidator().validate(TracePacketView.ofFragments(MemorySegment.ofArray(buffer), offsets, sizes));
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
     * skips, is checked all the same, wherever the fragments cut them.
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
