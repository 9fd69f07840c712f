package dev.ffmtrace.ipc;

import java.nio.charset.StandardCharsets;

/**
 * The id a host gives a remote machine, as Perfetto's {@code GenerateMachineID}: the low
 * 32 bits of the 64-bit FNV-1a hash of the relay's machine id hint (or, without one, of
 * the address the connection reached, its port left off), 1 where that would be 0, which
 * stands for the host itself. Equal hints give equal ids on every host, so a trace's
 * machine ids match traced's.
 */
public final class MachineIds {
    private static final long FNV_OFFSET_BASIS = 0xcbf29ce484222325L;
    private static final long FNV_PRIME = 0x100000001b3L;

    private MachineIds() {
    }

    /**
     * The machine id for {@code hint} (the bytes of the frame's string), or for {@code reachedAddress} (an address as
     * Perfetto writes it, {@code host:port} or {@code [v6]:port}) when the hint is empty.
     */
    public static int of(byte[] hint, String reachedAddress) {
        byte[] hashed = hint;
        if (hashed.length == 0) {
            int colon = reachedAddress.lastIndexOf(':');
            hashed = (colon < 0 ? reachedAddress : reachedAddress.substring(0, colon)).getBytes(StandardCharsets.UTF_8);
        }
        long hash = FNV_OFFSET_BASIS;
        for (byte b : hashed) {
            hash ^= b & 0xFF;
            hash *= FNV_PRIME;
        }
        int id = (int) hash;
        return id == ClientInfo.LOCAL_MACHINE ? 1 : id;
    }
}
