package dev.ffmtrace.cli;

import dev.ffmtrace.memory.Native;
import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.perfetto.protos.TrackDescriptor;
import dev.ffmtrace.perfetto.protos.TrackEvent;
import dev.ffmtrace.tracing.service.DataSource;
import dev.ffmtrace.tracing.smb.SharedMemoryArbiter.BufferExhaustedPolicy;
import dev.ffmtrace.tracing.smb.TraceWriter;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * What {@code record}'s demo producer threads write: per thread, a thread track (under the
 * process track) with nested request slices, a custom "queue" track where another thread
 * picks the request up (a flow links the two), and a counter track of the queue depth.
 * Each track's descriptor is written once on the sequence before its first event.
 */
final class DemoWorkload implements Runnable {
    private static final long PROCESS_UUID = 0x6666_7472_6163_6501L;

    private final int index;
    private final DataSource events;
    private final DataSource counters;
    private final AtomicBoolean stop;
    private final ConcurrentLinkedQueue<Long> handoffs;

    DemoWorkload(int index, DataSource events, DataSource counters, AtomicBoolean stop,
                 ConcurrentLinkedQueue<Long> handoffs) {
        this.index = index;
        this.events = events;
        this.counters = counters;
        this.stop = stop;
        this.handoffs = handoffs;
    }

    @Override
    public void run() {
        int pid = (int) ProcessHandle.current().pid();
        int tid = Native.gettid();
        long threadTrack = PROCESS_UUID + 0x100 + index;
        long queueTrack = PROCESS_UUID + 0x200 + index;
        long depthTrack = PROCESS_UUID + 0x300 + index;
        try (Arena arena = Arena.ofConfined();
             TraceWriter<TracePacket> writer = events.newTraceWriter(BufferExhaustedPolicy.STALL);
             TraceWriter<TracePacket> counterWriter = counters.newTraceWriter(BufferExhaustedPolicy.DROP)) {
            MemorySegment clock = arena.allocate(16, 8);
            describeTracks(writer, pid, tid, threadTrack, queueTrack);
            TrackDescriptor depth = counterWriter.newTracePacket().setTrackDescriptor();
            depth.setUuid(depthTrack);
            depth.setParentUuid(PROCESS_UUID);
            depth.setName("queue depth " + index);
            depth.setCounter();
            counterWriter.finishTracePacket();
            long request = 0;
            while (!stop.get()) {
                long flow = ((long) index << 40) | ++request;
                slice(writer, clock, threadTrack, TrackEvent.Type.TYPE_SLICE_BEGIN, "request " + request, flow, 0);
                slice(writer, clock, threadTrack, TrackEvent.Type.TYPE_SLICE_BEGIN, "parse", 0, 0);
                spin(2_000);
                slice(writer, clock, threadTrack, TrackEvent.Type.TYPE_SLICE_END, null, 0, 0);
                slice(writer, clock, threadTrack, TrackEvent.Type.TYPE_INSTANT, "enqueued", 0, 0);
                slice(writer, clock, threadTrack, TrackEvent.Type.TYPE_SLICE_END, null, 0, 0);
                handoffs.add(flow);
                Long picked = handoffs.poll();
                if (picked != null) {
                    slice(writer, clock, queueTrack, TrackEvent.Type.TYPE_SLICE_BEGIN, "handle", 0, picked);
                    spin(3_000);
                    slice(writer, clock, queueTrack, TrackEvent.Type.TYPE_SLICE_END, null, 0, 0);
                }
                TracePacket sample = counterWriter.newTracePacket();
                sample.setTimestamp(Native.clockGetTimeNanos(Native.CLOCK_BOOTTIME, clock));
                TrackEvent counter = sample.setTrackEvent();
                counter.setType(TrackEvent.Type.TYPE_COUNTER);
                counter.setTrackUuid(depthTrack);
                counter.setCounterValue(handoffs.size());
                counterWriter.finishTracePacket();
                Thread.sleep(1);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void describeTracks(TraceWriter<TracePacket> writer, int pid, int tid, long threadTrack, long queueTrack) {
        TracePacket first = writer.newTracePacket();
        first.setSequenceFlags(TracePacket.SequenceFlags.SEQ_INCREMENTAL_STATE_CLEARED);
        TrackDescriptor process = first.setTrackDescriptor();
        process.setUuid(PROCESS_UUID);
        process.setProcess().setPid(pid);
        writer.finishTracePacket();
        TrackDescriptor thread = writer.newTracePacket().setTrackDescriptor();
        thread.setUuid(threadTrack);
        thread.setParentUuid(PROCESS_UUID);
        var descriptor = thread.setThread();
        descriptor.setPid(pid);
        descriptor.setTid(tid);
        descriptor.setThreadName("demo worker " + index);
        writer.finishTracePacket();
        TrackDescriptor queue = writer.newTracePacket().setTrackDescriptor();
        queue.setUuid(queueTrack);
        queue.setParentUuid(PROCESS_UUID);
        queue.setName("queue " + index);
        writer.finishTracePacket();
    }

    private static void slice(TraceWriter<TracePacket> writer, MemorySegment clock, long track, int type, String name,
                              long flow, long terminatingFlow) {
        TracePacket packet = writer.newTracePacket();
        packet.setTimestamp(Native.clockGetTimeNanos(Native.CLOCK_BOOTTIME, clock));
        packet.setSequenceFlags(TracePacket.SequenceFlags.SEQ_NEEDS_INCREMENTAL_STATE);
        TrackEvent event = packet.setTrackEvent();
        event.setType(type);
        event.setTrackUuid(track);
        if (name != null) {
            event.setName(name);
        }
        if (flow != 0) {
            event.addFlowIds(flow);
        }
        if (terminatingFlow != 0) {
            event.addTerminatingFlowIds(terminatingFlow);
        }
        writer.finishTracePacket();
    }

    private static void spin(long nanos) {
        long until = System.nanoTime() + nanos;
        while (System.nanoTime() < until) {
            Thread.onSpinWait();
        }
    }
}
