package dev.ffmtrace.tracing.service;

import dev.ffmtrace.memory.Os;
import dev.ffmtrace.perfetto.protos.ClockSnapshot;
import dev.ffmtrace.perfetto.protos.RemoteClockSync;
import dev.ffmtrace.perfetto.protos.Trace;
import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.protozero.HeapBuffered;
import dev.ffmtrace.tracing.relay.ClockReading;
import java.util.ArrayDeque;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.TreeMap;

/**
 * The relays connected to the service (as {@code traced}'s relay clients): per relay
 * connection, the machine it relays for, that machine's SystemInfo from InitRelay and its
 * last {@value #KEPT_SYNCS} clock exchanges from SyncClock. A session writes, per remote
 * machine, the SystemInfo once with its first packets and the clock exchanges once at its
 * first readback, each stamped with the machine's id, so that a trace processor can name
 * the machine and put its timestamps on the host's time line.
 *
 * <p>Kept in the order traced keeps them (by machine id, unsigned, then connection); the
 * first connection of a machine that has what a packet needs speaks for the machine.
 * Thread-safe: one lock, held only to copy or change the maps.
 */
public final class RelayClients {
    /** Clock exchanges kept per relay, as traced keeps them. */
    static final int KEPT_SYNCS = 5;

    /** One clock exchange: the relay machine's readings and the host's, taken as its request came. */
    private record Exchange(List<ClockReading> client, List<ClockReading> host) {
    }

    /** One relay connection; its fields guarded by the owner's lock. */
    private static final class Relay {
        byte[] systemInfo;
        final ArrayDeque<Exchange> syncs = new ArrayDeque<>();
    }

    private record Key(int machineId, long clientId) implements Comparable<Key> {
        @Override
        public int compareTo(Key other) {
            int byMachine = Integer.compareUnsigned(machineId, other.machineId);
            return byMachine != 0 ? byMachine : Long.compare(clientId, other.clientId);
        }
    }

    private final Map<Key, Relay> relays = new TreeMap<>();

    /** Kept by the service ({@link TracingService#relays()}), which its relay ports feed. */
    RelayClients() {
    }

    /** Keeps the SystemInfo (a serialized message) relay connection {@code clientId} sent for machine {@code machineId}. */
    synchronized void initRelay(int machineId, long clientId, byte[] systemInfo) {
        relays.computeIfAbsent(new Key(machineId, clientId), key -> new Relay()).systemInfo = systemInfo.clone();
    }

    /**
     * Keeps one clock exchange of relay connection {@code clientId}: its machine's clocks
     * and the host's; the oldest goes beyond {@value #KEPT_SYNCS}.
     */
    synchronized void syncClocks(int machineId, long clientId, List<ClockReading> clientClocks,
                                        List<ClockReading> hostClocks) {
        Relay relay = relays.computeIfAbsent(new Key(machineId, clientId), key -> new Relay());
        if (relay.syncs.size() >= KEPT_SYNCS) {
            relay.syncs.removeFirst();
        }
        relay.syncs.addLast(new Exchange(List.copyOf(clientClocks), List.copyOf(hostClocks)));
    }

    /** Forgets relay connection {@code clientId}: it went away. */
    synchronized void disconnected(long clientId) {
        relays.keySet().removeIf(key -> key.clientId() == clientId);
        notifyAll();
    }

    /** Waits until no relay is connected, or {@code timeout} passes; returns whether none is. */
    synchronized boolean awaitEmpty(Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!relays.isEmpty()) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                return false;
            }
            TimeUnit.NANOSECONDS.timedWait(this, left);
        }
        return true;
    }

    /** Whether any relay is connected now. */
    public synchronized boolean isEmpty() {
        return relays.isEmpty();
    }

    /** One {@code system_info} packet per machine that sent one, stamped with its machine id, as traced writes them. */
    synchronized List<byte[]> systemInfoPackets() {
        List<byte[]> packets = new ArrayList<>();
        Set<Integer> machines = new HashSet<>();
        for (Map.Entry<Key, Relay> entry : relays.entrySet()) {
            byte[] info = entry.getValue().systemInfo;
            if (info == null || !machines.add(entry.getKey().machineId())) {
                continue;
            }
            HeapBuffered<Trace> trace = new HeapBuffered<>(Trace.FACTORY);
            TracePacket packet = trace.get().addPacket();
            packet.appendBytes(TracePacket.SYSTEM_INFO_FIELD_NUMBER, info);
            packet.setMachineId(entry.getKey().machineId());
            packet.setTrustedUid(Os.uid());
            packet.setTrustedPacketSequenceId(TracingSession.SERVICE_SEQUENCE_ID);
            packets.add(trace.toByteArray());
        }
        return packets;
    }

    /** One {@code remote_clock_sync} packet per machine with clock exchanges, as traced writes them. */
    synchronized List<byte[]> clockSyncPackets() {
        List<byte[]> packets = new ArrayList<>();
        Set<Integer> machines = new HashSet<>();
        for (Map.Entry<Key, Relay> entry : relays.entrySet()) {
            Relay relay = entry.getValue();
            if (relay.syncs.isEmpty() || !machines.add(entry.getKey().machineId())) {
                continue;
            }
            HeapBuffered<Trace> trace = new HeapBuffered<>(Trace.FACTORY);
            TracePacket packet = trace.get().addPacket();
            packet.setMachineId(entry.getKey().machineId());
            packet.setTrustedUid(Os.uid());
            RemoteClockSync sync = packet.setRemoteClockSync();
            for (Exchange exchange : relay.syncs) {
                RemoteClockSync.SyncedClocks clocks = sync.addSyncedClocks();
                addClocks(clocks.setClientClocks(), exchange.client());
                addClocks(clocks.setHostClocks(), exchange.host());
            }
            packets.add(trace.toByteArray());
        }
        return packets;
    }

    private static void addClocks(ClockSnapshot snapshot, List<ClockReading> readings) {
        for (ClockReading reading : readings) {
            ClockSnapshot.Clock clock = snapshot.addClocks();
            clock.setClockId(reading.clockId());
            clock.setTimestamp(reading.timestamp());
        }
    }
}
