package dev.ffmtrace.tracing.trackevent;

import dev.ffmtrace.perfetto.protos.ClockSnapshot;
import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.perfetto.protos.TracePacketDefaults;
import java.util.Arrays;

/**
 * One sequence's incremental state as its writer has written it, and the packets it needs
 * before an event: the state packet with the sequence's defaults, track descriptors (once
 * per state, parents first), the clock snapshot that starts the incremental clock, and
 * each event packet's timestamp and flags. When the sink's epoch moves all of it, the
 * interned names included, is written anew.
 */
final class SequenceState {
    private final TracePacketSink sink;
    private final InterningTable interning;
    private final Track defaultTrack;
    private final TraceClock clock;
    private final boolean incremental;
    /** The clock id the defaults give every packet's timestamp (0: the trace's default clock). */
    private final int defaultClockId;
    /** Per track index, the uuid of the track whose descriptor this sequence has (0: none); indexes are reused. */
    private long[] described = new long[64];
    private boolean stateValid;
    private boolean clockStarted;
    private boolean firstPacket = true;
    private long epochSeen;
    private long lastTimestamp;

    SequenceState(TracePacketSink sink, InterningTable interning, TrackEventWriter.Config config) {
        this.sink = sink;
        this.interning = interning;
        this.defaultTrack = config.defaultTrack();
        this.clock = config.clock();
        this.incremental = config.incrementalTimestamps();
        this.defaultClockId = incremental ? TrackEventWriter.INCREMENTAL_CLOCK_ID
                : clock == TraceClock.BOOTTIME ? 0 : clock.id;
        this.epochSeen = sink.incrementalStateEpoch();
    }

    /**
     * Writes {@code track}'s descriptor (and its parents') unless this state has it, after
     * the incremental state if that must be written anew.
     */
    void describe(Track track) {
        ensureIncrementalState();
        writeDescriptor(track);
    }

    /**
     * Starts an event's packet: the incremental state first if needed, then the track's
     * descriptor and, once per state, the clock snapshot that starts the incremental
     * clock at this event's time.
     */
    TracePacket startPacket(Track track, long timestamp) {
        ensureIncrementalState();
        if (!isDescribed(track)) {
            writeDescriptor(track);
        }
        if (incremental && !clockStarted) {
            writeClockSnapshot(timestamp);
        }
        TracePacket packet = sink.newTracePacket();
        if (!incremental) {
            packet.setTimestamp(timestamp);
        } else if (timestamp >= lastTimestamp) {
            packet.setTimestamp(timestamp - lastTimestamp);
            lastTimestamp = timestamp;
        } else {
            packet.setTimestamp(timestamp);
            packet.setTimestampClockId(clock.id);
        }
        packet.setSequenceFlags(TracePacket.SequenceFlags.SEQ_NEEDS_INCREMENTAL_STATE.number());
        return packet;
    }

    /** Starts the sequence's incremental state again if it was never written or may have been lost. */
    private void ensureIncrementalState() {
        long epoch = sink.incrementalStateEpoch();
        if (stateValid && epoch == epochSeen) {
            return;
        }
        epochSeen = epoch;
        interning.clear();
        Arrays.fill(described, 0);
        stateValid = true;
        clockStarted = false;
        writeStatePacket();
        if (defaultTrack != null) {
            writeDescriptor(defaultTrack);
        }
    }

    private void writeStatePacket() {
        TracePacket packet = sink.newTracePacket();
        packet.setSequenceFlags(TracePacket.SequenceFlags.SEQ_INCREMENTAL_STATE_CLEARED.number());
        if (firstPacket) {
            packet.setFirstPacketOnSequence(true);
            firstPacket = false;
        }
        if (defaultClockId != 0 || defaultTrack != null) {
            TracePacketDefaults defaults = packet.setTracePacketDefaults();
            if (defaultClockId != 0) {
                defaults.setTimestampClockId(defaultClockId);
            }
            if (defaultTrack != null) {
                defaults.setTrackEventDefaults().setTrackUuid(defaultTrack.uuid());
            }
        }
        sink.finishTracePacket();
    }

    /** Starts the incremental clock at {@code timestamp} of the writer's clock. */
    private void writeClockSnapshot(long timestamp) {
        TracePacket packet = sink.newTracePacket();
        ClockSnapshot snapshot = packet.setClockSnapshot();
        ClockSnapshot.Clock base = snapshot.addClocks();
        base.setClockId(clock.id);
        base.setTimestamp(timestamp);
        ClockSnapshot.Clock deltas = snapshot.addClocks();
        deltas.setClockId(TrackEventWriter.INCREMENTAL_CLOCK_ID);
        deltas.setTimestamp(timestamp);
        deltas.setIsIncremental(true);
        sink.finishTracePacket();
        lastTimestamp = timestamp;
        clockStarted = true;
    }

    private boolean isDescribed(Track track) {
        return track.index < described.length && described[track.index] == track.uuid();
    }

    private void writeDescriptor(Track track) {
        if (isDescribed(track)) {
            return;
        }
        if (track.parent() != null) {
            writeDescriptor(track.parent());
        }
        TracePacket packet = sink.newTracePacket();
        track.describe(packet.setTrackDescriptor());
        sink.finishTracePacket();
        if (track.index >= described.length) {
            described = Arrays.copyOf(described, Math.max(track.index + 1, described.length * 2));
        }
        described[track.index] = track.uuid();
    }
}
