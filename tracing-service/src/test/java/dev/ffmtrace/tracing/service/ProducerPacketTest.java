package dev.ffmtrace.tracing.service;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.ffmtrace.tracing.buffer.TracePacketView;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.HexFormat;
import org.junit.jupiter.api.Test;

/**
 * A producer's packet as a sink copies it: the packet's bytes gathered from its
 * fragments, checked on the copy, then the trusted fields, with the producer's own loss
 * merged into the service's.
 */
class ProducerPacketTest {
    private static final HexFormat HEX = HexFormat.of();
    private static final int SEQUENCE = 5;
    /** trusted_uid 0, trusted_packet_sequence_id 5, trusted_pid 0: what a view of no client gets. */
    private static final String TRAILER = "1800" + "5005" + "f80400";

    /**
     * The copy of the packet {@code hex} with service loss {@code loss}, in hex, or "invalid":
     * the same whether the buffer holds the packet whole or in two or three fragments, cut
     * anywhere, in reverse order, with a trusted field's tag between and after them.
     */
    private static String copy(String hex, int loss) {
        byte[] packet = HEX.parseHex(hex);
        String whole = copy(packet, new int[0], loss);
        for (int cut = 0; cut <= packet.length; cut++) {
            assertEquals(whole, copy(packet, new int[] {cut}, loss), "cut at " + cut);
            for (int second = cut; second <= packet.length; second++) {
                assertEquals(whole, copy(packet, new int[] {cut, second}, loss), "cut at " + cut + " and " + second);
            }
        }
        return whole;
    }

    private static String copy(byte[] packet, int[] cuts, int loss) {
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
        ProducerPacket producerPacket = ProducerPackets.of(
                TracePacketView.ofFragments(MemorySegment.ofArray(buffer), offsets, sizes), SEQUENCE, loss);
        byte[] into = new byte[producerPacket.maxSize() + 2];
        Arrays.fill(into, (byte) 0x77);
        int size = producerPacket.copyTo(into, 1);
        if (size < 0) {
            return "invalid";
        }
        assertEquals(0x77, into[0], "nothing written before the packet");
        assertEquals(0x77, into[1 + producerPacket.maxSize()], "nothing written past the most it may write");
        return HEX.formatHex(into, 1, 1 + size);
    }

    @Test
    void aValidPacketIsCopiedWithTheTrustedFields() {
        assertEquals("4001" + "5a03ffffff" + TRAILER, copy("4001" + "5a03ffffff", 0));
        assertEquals(TRAILER, copy("", 0), "an empty packet");
    }

    @Test
    void anInvalidPacketIsRefusedWhereverItIsCut() {
        assertEquals("invalid", copy("4001" + "1800", 0), "a forged trusted_uid");
        assertEquals("invalid", copy("4001" + "5a05", 0), "a length past the end");
    }

    @Test
    void theServicesLossCarriesTheProducersOwn() {
        // previous_packet_dropped: READ_GAP | PRESENT found by the service (3), alone...
        assertEquals("4001" + TRAILER + "d00203", copy("4001", 3));
        // ... and with the producer's SMB_FULL | PRESENT (257): 259, a varint a byte longer.
        assertEquals("d0028102" + TRAILER + "d0028302", copy("d0028102", 3));
        // The producer's loss without the service's stays the producer's field alone.
        assertEquals("d0028102" + TRAILER, copy("d0028102", 0));
    }
}
