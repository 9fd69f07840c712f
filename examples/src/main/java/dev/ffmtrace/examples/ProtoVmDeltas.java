package dev.ffmtrace.examples;

import dev.ffmtrace.perfetto.protos.TestEvent;
import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.tracing.producer.DataSourceDescriptor;
import dev.ffmtrace.tracing.producer.DataSourceHandler;
import dev.ffmtrace.tracing.producer.DataSourceInstance;
import dev.ffmtrace.tracing.producer.ProducerConnection;
import dev.ffmtrace.tracing.smb.BufferExhaustedPolicy;
import dev.ffmtrace.tracing.smb.TraceWriter;
import java.io.ByteArrayOutputStream;
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
        byte[] path = bytesField(2, varintField(1, FOR_TESTING));                   // relative_path { field_id }
        byte[] merge = bytesField(7, bytesField(3, new byte[0]));                  // nested: merge {}
        byte[] dst = bytesField(7, bytesField(1, concat(varintField(1, 2), path,  // nested: select DST, create
                varintField(3, 1))), merge);
        byte[] src = concat(bytesField(1, path), dst);                              // select (SRC) { ... }
        return concat(varintField(1, 1), bytesField(2, src));                       // VmProgram { version, instructions }
    }

    private static byte[] varintField(int id, long value) {
        return concat(varint((long) id << 3), varint(value));
    }

    private static byte[] bytesField(int id, byte[]... parts) {
        byte[] body = concat(parts);
        return concat(varint((long) id << 3 | 2), varint(body.length), body);
    }

    private static byte[] varint(long value) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        while ((value & ~0x7fL) != 0) {
            out.write((int) (value & 0x7f) | 0x80);
            value >>>= 7;
        }
        out.write((int) value);
        return out.toByteArray();
    }

    private static byte[] concat(byte[]... parts) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (byte[] part : parts) {
            out.writeBytes(part);
        }
        return out.toByteArray();
    }
}
