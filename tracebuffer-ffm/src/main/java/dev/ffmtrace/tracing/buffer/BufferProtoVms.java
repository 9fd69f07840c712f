package dev.ffmtrace.tracing.buffer;

import dev.ffmtrace.protovm.ProtoVm;
import dev.ffmtrace.protovm.Status;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * The ProtoVMs of one {@link TraceBufferV2}, as Perfetto's buffer keeps them: one per data
 * source name and program, shared by the producers that registered that program, each
 * handed the packets of its producers that the ring buffer is about to overwrite.
 *
 * <p>A packet goes to the VMs in the order they were set up, until one returns OK (so the
 * first program that understands it keeps it). Its bytes are copied out of the buffer first:
 * a VM parses only memory no producer can change. Not thread-safe: the buffer's owner
 * serializes it with the buffer.
 */
public final class BufferProtoVms {
    /** One VM: its data source, program, limit and the producers whose packets it takes (ascending). */
    public record Instance(String dataSourceName, ProtoVm vm, int memoryLimitKb, int[] producerIds) {
        public Instance {
            producerIds = producerIds.clone();
        }

        @Override
        public int[] producerIds() {
            return producerIds.clone();
        }
    }

    private final List<Entry> entries = new ArrayList<>();
    private final boolean readOnly;
    /** The overwritten packet, joined into one run of bytes; grows to the largest packet. */
    private byte[] patch = new byte[256];
    private MemorySegment patchSegment = MemorySegment.ofArray(patch);
    private long patchesApplied;
    private long patchesUnapplied;
    private long patchesAborted;

    private static final class Entry {
        final String dataSourceName;
        final byte[] program;
        final int programHash;
        final int memoryLimitKb;
        final ProtoVm vm;
        int[] producers = new int[0];

        Entry(String dataSourceName, byte[] program, int memoryLimitKb, ProtoVm vm) {
            this.dataSourceName = dataSourceName;
            this.program = program;
            this.programHash = Arrays.hashCode(program);
            this.memoryLimitKb = memoryLimitKb;
            this.vm = vm;
        }

        boolean serves(int producerId) {
            return Arrays.binarySearch(producers, producerId) >= 0;
        }

        void addProducer(int producerId) {
            int at = Arrays.binarySearch(producers, producerId);
            if (at < 0) {
                int insertion = -at - 1;
                int[] grown = new int[producers.length + 1];
                System.arraycopy(producers, 0, grown, 0, insertion);
                grown[insertion] = producerId;
                System.arraycopy(producers, insertion, grown, insertion + 1, producers.length - insertion);
                producers = grown;
            }
        }
    }

    BufferProtoVms() {
        this(false);
    }

    private BufferProtoVms(boolean readOnly) {
        this.readOnly = readOnly;
    }

    /**
     * Makes {@code producerId}'s packets of data source {@code dataSourceName} go to a VM
     * running {@code program} within {@code memoryLimitKb} KiB: the VM already running that
     * program for that data source, or a new one after the others (Perfetto's
     * {@code MaybeSetUpProtoVm}).
     *
     * @throws IllegalStateException on a read-only clone's VMs
     */
    public void setUp(String dataSourceName, byte[] program, int memoryLimitKb, int producerId) {
        Objects.requireNonNull(dataSourceName, "dataSourceName");
        Objects.requireNonNull(program, "program");
        if (readOnly) {
            throw new IllegalStateException("read-only clone");
        }
        int hash = Arrays.hashCode(program);
        for (Entry entry : entries) {
            if (entry.programHash == hash && entry.dataSourceName.equals(dataSourceName)
                    && Arrays.equals(entry.program, program)) {
                entry.addProducer(producerId);
                return;
            }
        }
        byte[] copy = program.clone();
        ProtoVm vm = new ProtoVm(MemorySegment.ofArray(copy), Integer.toUnsignedLong(memoryLimitKb) * 1024, null);
        Entry entry = new Entry(dataSourceName, copy, memoryLimitKb, vm);
        entry.addProducer(producerId);
        entries.add(entry);
    }

    public boolean isEmpty() {
        return entries.isEmpty();
    }

    /** Hands an overwritten packet to the VMs of its producer; an empty one is nobody's patch. */
    void apply(TracePacketView packet) {
        int producerId = packet.producerId();
        long size = packet.size();
        if (size == 0) {
            return;
        }
        boolean copied = false;
        for (Entry entry : entries) {
            if (!entry.serves(producerId)) {
                continue;
            }
            if (!copied) {
                copyOut(packet, size);
                copied = true;
            }
            Status status;
            try {
                status = entry.vm.applyPatch(patchSegment, 0, size);
            } catch (RuntimeException e) {
                // A VM bug must not fail the producer's commit that made room: that VM aborts.
                status = Status.ABORT;
            }
            if (status == Status.OK) {
                patchesApplied++;
                return;
            }
            if (status == Status.ABORT) {
                patchesAborted++;
            }
        }
        if (copied) {
            patchesUnapplied++;
        }
    }

    private void copyOut(TracePacketView packet, long size) {
        if (patch.length < size) {
            patch = new byte[(int) Math.max(size, patch.length * 2L)];
            patchSegment = MemorySegment.ofArray(patch);
        }
        packet.copyTo(patchSegment, 0);
    }

    /** The VMs in the order they were set up. */
    public List<Instance> instances() {
        List<Instance> instances = new ArrayList<>(entries.size());
        for (Entry entry : entries) {
            instances.add(new Instance(entry.dataSourceName, entry.vm, entry.memoryLimitKb, entry.producers));
        }
        return instances;
    }

    /** Overwritten packets a VM took (returned OK). */
    public long patchesApplied() {
        return patchesApplied;
    }

    /** Overwritten packets every VM of their producer refused (ERROR or ABORT). */
    public long patchesUnapplied() {
        return patchesUnapplied;
    }

    /** VM runs that aborted: a program or packet the VM could not handle. */
    public long patchesAborted() {
        return patchesAborted;
    }

    /** The VMs' memory, as their limits count it. */
    public long memoryUsageBytes() {
        long total = 0;
        for (Entry entry : entries) {
            total += entry.vm.memoryUsageBytes();
        }
        return total;
    }

    /** Read-only snapshots of the VMs, for a clone of the buffer: their states no longer change. */
    BufferProtoVms cloneReadOnly() {
        BufferProtoVms clone = new BufferProtoVms(true);
        for (Entry entry : entries) {
            Entry copy = new Entry(entry.dataSourceName, entry.program, entry.memoryLimitKb, entry.vm.cloneReadOnly());
            copy.producers = entry.producers;
            clone.entries.add(copy);
        }
        clone.patchesApplied = patchesApplied;
        clone.patchesUnapplied = patchesUnapplied;
        clone.patchesAborted = patchesAborted;
        return clone;
    }
}
