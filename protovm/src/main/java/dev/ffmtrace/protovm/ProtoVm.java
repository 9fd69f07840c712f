package dev.ffmtrace.protovm;

import dev.ffmtrace.protozero.HeapBuffered;
import dev.ffmtrace.protozero.Message;
import dev.ffmtrace.protozero.MessageFactory;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.Objects;

/**
 * A ProtoVM instance as Perfetto's service keeps one per data source and program: a
 * producer's program, the incremental state it builds from the packets it is handed, 32
 * registers, and a memory limit. {@link #applyPatch} runs the program on one packet (the
 * service hands it each packet a ring buffer is about to overwrite); {@link #writeState}
 * writes the state the trace keeps instead of the lost packets.
 *
 * <p>Status, memory use and state bytes match Perfetto's C++ VM (src/protovm) for every
 * program and patch, except where the C++ crashes or leaks: those cases are listed in
 * docs/protovm.md. Programs and patches are untrusted: nothing a producer writes makes
 * this class throw; a bad program or patch costs at most its own VM (ABORT).
 *
 * <p>Not thread-safe: the service runs a VM under its buffer's lock.
 */
public final class ProtoVm {
    /** Instruction lists a program may nest; deeper ones are malformed. */
    static final int MAX_PROGRAM_NESTING = 64;

    private final byte[] program;
    private final long memoryLimitBytes;
    private final AbortTrace trace = new AbortTrace();
    /** Null for a read-only clone. */
    private final StateAllocator allocator;
    private final Interpreter interpreter;
    private final StateNode root;
    /** A read-only clone's state, serialised once; null for a read-write VM. */
    private final byte[] frozenState;

    /**
     * A VM running {@code program} (a serialised {@code VmProgram}) within
     * {@code memoryLimitBytes}, starting from {@code initialState} (a serialised state, or
     * null for none). An initial state over the limit is dropped, as the C++ drops it.
     */
    public ProtoVm(MemorySegment program, long memoryLimitBytes, MemorySegment initialState) {
        Objects.requireNonNull(program, "program");
        if (memoryLimitBytes < 0) {
            throw new IllegalArgumentException("memory limit " + memoryLimitBytes + " < 0");
        }
        this.program = program.toArray(ValueLayout.JAVA_BYTE);
        this.memoryLimitBytes = memoryLimitBytes;
        this.allocator = new StateAllocator(memoryLimitBytes, trace);
        this.root = new StateNode();
        StateCursor.Machine machine = new StateCursor.Machine(allocator, trace, root, new StateCursor.Readers());
        MemorySegment copy = MemorySegment.ofArray(this.program);
        this.interpreter = new Interpreter(
                Instruction.decodeProgram(copy, 0, copy.byteSize(), MAX_PROGRAM_NESTING), machine);
        this.frozenState = null;
        if (initialState != null) {
            new StateCursor(machine).atRoot().setBytes(initialState, 0, initialState.byteSize());
            trace.clear();
        }
    }

    private ProtoVm(byte[] program, long memoryLimitBytes, byte[] frozenState) {
        this.program = program;
        this.memoryLimitBytes = memoryLimitBytes;
        this.allocator = null;
        this.interpreter = null;
        this.root = null;
        this.frozenState = frozenState;
    }

    /**
     * Runs the program on {@code patch}, changing the state. An ABORT keeps what the
     * program changed before it; {@link #abortReason()} says why. A read-only clone
     * aborts every patch.
     */
    public Status applyPatch(MemorySegment patch) {
        return applyPatch(patch, 0, patch.byteSize());
    }

    /** {@link #applyPatch(MemorySegment)} of the {@code length} bytes at {@code offset} of {@code data}. */
    public Status applyPatch(MemorySegment data, long offset, long length) {
        Objects.checkFromIndexSize(offset, length, data.byteSize());
        if (interpreter == null) {
            trace.abort("read-only clone");
            return Status.ABORT;
        }
        return Status.of(interpreter.run(data, offset, length));
    }

    /** Why the last patch aborted: the failure, then the context it passed through. Empty otherwise. */
    public List<String> abortReason() {
        return trace.lines();
    }

    /** Writes the state as fields of {@code target}. */
    public void writeState(Message target) {
        if (frozenState != null) {
            target.appendRawProtoBytes(frozenState, 0, frozenState.length);
        } else {
            StateSerializer.write(root, target);
        }
    }

    private static final class Root extends Message {
    }

    private static final MessageFactory<Root> ROOT = MessageFactory.of(Root::new);

    /** The state serialised on its own, as Perfetto's {@code SerializeIncrementalStateAsString}. */
    public byte[] serializeState() {
        HeapBuffered<Root> buffer = new HeapBuffered<>(ROOT);
        writeState(buffer.get());
        return buffer.toByteArray();
    }

    /** The program as the producer gave it. */
    public byte[] program() {
        return program.clone();
    }

    public long memoryLimitBytes() {
        return memoryLimitBytes;
    }

    /**
     * What the VM counts against its limit, Perfetto's {@code GetMemoryUsageBytes}: the
     * program's length plus the state's nodes and blobs, or, for a read-only clone, plus
     * its serialised state's length.
     */
    public long memoryUsageBytes() {
        return program.length + (frozenState != null ? frozenState.length : allocator.used());
    }

    /** A snapshot whose state no patch changes: what a clone of the buffer carries. */
    public ProtoVm cloneReadOnly() {
        return new ProtoVm(program, memoryLimitBytes, frozenState != null ? frozenState : serializeState());
    }

    public boolean isReadOnly() {
        return frozenState != null;
    }
}
