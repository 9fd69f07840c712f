package dev.ffmtrace.examples;

import dev.ffmtrace.perfetto.protos.TestEvent;
import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.perfetto.protos.VmCursorEnum;
import dev.ffmtrace.perfetto.protos.VmInstruction;
import dev.ffmtrace.perfetto.protos.VmOpSelect;
import dev.ffmtrace.perfetto.protos.VmProgram;
import dev.ffmtrace.protozero.HeapBuffered;
import dev.ffmtrace.tracing.producer.DataSourceDescriptor;
import dev.ffmtrace.tracing.producer.DataSourceHandler;
import dev.ffmtrace.tracing.producer.DataSourceInstance;
import dev.ffmtrace.tracing.producer.ProducerConnection;
import dev.ffmtrace.tracing.smb.BufferExhaustedPolicy;
import dev.ffmtrace.tracing.smb.TraceWriter;
import java.util.concurrent.CountDownLatch;

/**
 * A producer whose data source writes only deltas, and hands the service a ProtoVM program
 * that folds each delta the ring buffer overwrites into a state: the trace then keeps the
 * latest value of every field even after the packets that set them are gone.
 *
 * <p>Delta {@code i} is a {@code for_testing} packet setting one field: {@code str} ("s" + i),
 * {@code seq_value} (i) or {@code counter} (2i), in turn. The program: for the packet's
 * {@code for_testing}, select the state's {@code for_testing} (created if absent) and merge.
 * Arguments: [DELTAS] (default 3000) [SOCKET] (else the producer socket as Perfetto's clients
 * find it).
 */
public final class ProtoVmDeltas {
    static final String DATA_SOURCE = "ffmtrace.deltas";
    static final int FOR_TESTING = TracePacket.FOR_TESTING_FIELD_NUMBER;
    /** The VmProgram: select SRC [for_testing] { select DST [for_testing] create { merge } }. */
    static final byte[] PROGRAM = program();

    public static void main(String[] args) throws InterruptedException {
        int deltas = args.length > 0 ? Integer.parseInt(args[0]) : 3000;
        ProducerConnection.Options options = ProducerConnection.Options.named("deltas");
        if (args.length > 1) {
            options = options.withSocket(ProducerConnection.socketAddress(args[1]));
        }
        CountDownLatch stopped = new CountDownLatch(1);
        try (ProducerConnection connection = ProducerConnection.connect(options)) {
            connection.registerDataSource(DataSourceDescriptor.named(DATA_SOURCE).withProtoVmProgram(PROGRAM),
                    new DataSourceHandler() {
                        private Thread writer;

                        @Override
                        public void onStart(DataSourceInstance instance) {
                            writer = Thread.ofPlatform().start(() -> write(instance, deltas));
                        }

                        @Override
                        public void onStop(DataSourceInstance instance, Runnable done) {
                            Thread.ofPlatform().start(() -> {
                                try {
                                    writer.join();
                                } catch (InterruptedException e) {
                                    Thread.currentThread().interrupt();
                                }
                                done.run();
                                stopped.countDown();
                            });
                        }
                    });
            stopped.await();
        }
        System.out.println("wrote " + deltas + " deltas");
    }

    /** Writes the deltas at once (STALL: none dropped), so every run writes the same chunks. */
    static void write(DataSourceInstance instance, int deltas) {
        try (TraceWriter<TracePacket> writer = instance.newTraceWriter(BufferExhaustedPolicy.STALL)) {
            for (int i = 0; i < deltas; i++) {
                TestEvent delta = writer.newTracePacket().setForTesting();
                switch (i % 3) {
                    case 0 -> delta.setStr("s" + i);
                    case 1 -> delta.setSeqValue(i);
                    default -> delta.setCounter(2L * i);
                }
                writer.finishTracePacket();
            }
            writer.flush();
        }
    }

    private static byte[] program() {
        HeapBuffered<VmProgram> program = new HeapBuffered<>(VmProgram.FACTORY);
        program.get().setVersion(1);
        VmInstruction src = program.get().addInstructions();
        src.setSelect().addRelativePath().setFieldId(FOR_TESTING);               // SRC: the packet's for_testing
        VmInstruction dst = src.addNestedInstructions();
        VmOpSelect state = dst.setSelect();
        state.setCursor(VmCursorEnum.VM_CURSOR_DST);                              // the state's for_testing,
        state.addRelativePath().setFieldId(FOR_TESTING);
        state.setCreateIfNotExist(true);                                          // made if absent
        dst.addNestedInstructions().setMerge();                                   // merge one into the other
        return program.toByteArray();
    }
}
