package dev.ffmtrace.examples;

import dev.ffmtrace.memory.StreamAddress;
import dev.ffmtrace.perfetto.protos.LayersSnapshotProto;
import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.perfetto.protos.TransactionTraceEntry;
import dev.ffmtrace.perfetto.protos.VmCursorEnum;
import dev.ffmtrace.perfetto.protos.VmInstruction;
import dev.ffmtrace.perfetto.protos.VmOpSelect;
import dev.ffmtrace.perfetto.protos.VmProgram;
import dev.ffmtrace.protozero.HeapBuffered;
import dev.ffmtrace.tracing.producer.DataSourceDescriptor;
import dev.ffmtrace.tracing.sdk.DataSource;
import dev.ffmtrace.tracing.sdk.DataSourceCallbacks;
import dev.ffmtrace.tracing.sdk.InstanceSetup;
import dev.ffmtrace.tracing.sdk.Tracing;
import dev.ffmtrace.tracing.sdk.TracingOptions;
import dev.ffmtrace.tracing.smb.BufferExhaustedPolicy;
import java.util.concurrent.CountDownLatch;

/**
 * A producer whose data source writes only deltas, and hands the service a ProtoVM program
 * that folds each delta the ring buffer overwrites into a state: the trace keeps a full
 * snapshot after the packets that built it are gone, and Perfetto's trace processor turns
 * each delta left in the trace back into a full snapshot.
 *
 * <p>The packets are those of the trace processor's own ProtoVM test: first a SurfaceFlinger
 * layers snapshot that sets {@code where} (the ring overwrites it early), then DELTAS
 * transaction entries, each with a vsync id and a time; the last two are the test's. The
 * program, for each packet: merge a layers snapshot into the state's; copy a transaction's
 * vsync id into the state's snapshot and its time into the state's timestamp. An instruction
 * whose source the packet lacks is skipped. Arguments: [DELTAS] (at least 2, default 3000)
 * [SOCKET] (else the producer socket as Perfetto's clients find it).
 */
public final class ProtoVmDeltas {
    static final String DATA_SOURCE = "ffmtrace.deltas";
    static final String WHERE = "set only by a packet the ring buffer overwrote";
    /** The trace processor test's transactions, written last: {vsync_id, elapsed_realtime_nanos}. */
    static final long[][] LAST = {{24776, 2749532000001L}, {24805, 2749555000001L}};
    static final int LAYERS = TracePacket.SURFACEFLINGER_LAYERS_SNAPSHOT_FIELD_NUMBER;
    static final int TRANSACTIONS = TracePacket.SURFACEFLINGER_TRANSACTIONS_FIELD_NUMBER;
    static final byte[] PROGRAM = program();

    public static void main(String[] args) throws InterruptedException {
        int deltas = args.length > 0 ? Integer.parseInt(args[0]) : 3000;
        if (deltas < LAST.length) {
            throw new IllegalArgumentException("DELTAS must be at least " + LAST.length + ", got " + deltas);
        }
        TracingOptions options = TracingOptions.named("deltas");
        Tracing.initialize(args.length > 1 ? options.withSystemBackend(StreamAddress.parse(args[1]))
                : options.withSystemBackend());
        CountDownLatch started = new CountDownLatch(1);
        CountDownLatch stopped = new CountDownLatch(1);
        DataSource<Void> source = register(started, stopped);
        started.await();                       // a session named the data source
        write(source, deltas);
        stopped.await();                       // and stopped it: what it wrote is committed
        Tracing.shutdown();
        System.out.println("wrote " + deltas + " deltas");
    }

    /** The data source with its program; {@code started} and {@code stopped} count down as a session starts and stops it. */
    static DataSource<Void> register(CountDownLatch started, CountDownLatch stopped) {
        return DataSource.register(DataSourceDescriptor.named(DATA_SOURCE).withProtoVmProgram(PROGRAM),
                new DataSourceCallbacks<>() {
                    @Override
                    public Void onSetup(InstanceSetup setup) {
                        return null;
                    }

                    @Override
                    public void onStart(Void state) {
                        started.countDown();
                    }

                    @Override
                    public void onStop(Void state, Runnable done) {
                        done.run();
                        stopped.countDown();
                    }
                }, BufferExhaustedPolicy.STALL);
    }

    /** Writes the packets at once and commits them (STALL: none dropped, so every run writes the same chunks). */
    static void write(DataSource<Void> source, int deltas) {
        source.trace(ctx -> {
            ctx.newTracePacket().setSurfaceflingerLayersSnapshot().setWhere(WHERE);
            for (int i = 0; i < deltas; i++) {
                int last = i - (deltas - LAST.length);   // >= 0 for the test's transactions
                TransactionTraceEntry delta = ctx.newTracePacket().setSurfaceflingerTransactions();
                delta.setVsyncId(last >= 0 ? LAST[last][0] : 20_000 + i);
                delta.setElapsedRealtimeNanos(last >= 0 ? LAST[last][1] : 2_700_000_000_000L + 1_000L * i);
            }
            ctx.finishTracePacket();
            ctx.flush();
        });
    }

    private static byte[] program() {
        HeapBuffered<VmProgram> program = new HeapBuffered<>(VmProgram.FACTORY);
        program.get().setVersion(1);
        fold(program.get(), new int[] {LAYERS}, new int[] {LAYERS}, false);
        fold(program.get(), new int[] {TRANSACTIONS, TransactionTraceEntry.VSYNC_ID_FIELD_NUMBER},
                new int[] {LAYERS, LayersSnapshotProto.VSYNC_ID_FIELD_NUMBER}, true);
        fold(program.get(), new int[] {TRANSACTIONS, TransactionTraceEntry.ELAPSED_REALTIME_NANOS_FIELD_NUMBER},
                new int[] {TracePacket.TIMESTAMP_FIELD_NUMBER}, true);
        return program.toByteArray();
    }

    /** select SRC [from] { select DST [to], made if absent { set or merge } }; skipped without a source. */
    private static void fold(VmProgram program, int[] from, int[] to, boolean set) {
        VmInstruction packet = program.addInstructions();
        VmOpSelect source = packet.setSelect();                                   // the packet's field
        for (int field : from) {
            source.addRelativePath().setFieldId(field);
        }
        packet.setAbortLevel(VmInstruction.AbortLevel.SKIP_CURRENT_INSTRUCTION);  // absent: skip
        VmInstruction state = packet.addNestedInstructions();
        VmOpSelect target = state.setSelect();
        target.setCursor(VmCursorEnum.VM_CURSOR_DST);                            // the state's field,
        for (int field : to) {
            target.addRelativePath().setFieldId(field);
        }
        target.setCreateIfNotExist(true);                                         // made if absent
        if (set) {
            state.addNestedInstructions().setSet();                               // copied over
        } else {
            state.addNestedInstructions().setMerge();                             // or merged into
        }
    }
}
