package dev.ffmtrace.tracing.service.ipc;

import dev.ffmtrace.ipc.Invocation;
import dev.ffmtrace.perfetto.protos.QueryServiceStateResponse;
import dev.ffmtrace.perfetto.protos.TracingServiceState;
import dev.ffmtrace.protozero.HeapBuffered;
import dev.ffmtrace.tracing.service.Producer;
import dev.ffmtrace.tracing.service.TracingSession;
import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/**
 * The replies to one QueryServiceState, as Perfetto's ConsumerIPCService splits them: the
 * first starts with the scalar fields, then every producer, session and data source
 * follows as a TracingServiceState of its own, packed into replies of at most
 * {@link #MAX_STATE_REPLY} bytes, so that each reply is a valid message and the replies
 * concatenated are the whole state (Perfetto splits only the data sources, and trusts the
 * rest to fit one reply). An entry that alone would not fit a reply is left out.
 */
final class ServiceStateReplies {
    /** A reply's state stays under this, as Perfetto's (kIPCBufferSize - 128). */
    static final int MAX_STATE_REPLY = ConsumerPort.IPC_BUFFER_SIZE - 128;

    private final List<byte[]> entries = new ArrayList<>();

    void addProducer(Producer producer) {
        entries.add(entry(state -> {
            TracingServiceState.Producer entry = state.addProducers();
            entry.setId(producer.id());
            entry.setName(producer.name());
            entry.setUid(producer.identity().uid());
            entry.setPid(producer.identity().pid());
            if (producer.identity().machineId() != 0) {
                // Another machine's producer, through a relay: as traced lists it.
                entry.setMachineId(producer.identity().machineId());
                entry.setMachineName(producer.machineName());
            }
        }));
    }

    void addSession(long id, int consumerUid, long startRealtimeNs, TracingSession session) {
        entries.add(entry(state -> {
            TracingServiceState.TracingSession entry = state.addTracingSessions();
            entry.setId(id);
            entry.setConsumerUid(consumerUid);
            entry.setState(session.isStopped() ? "DISABLED" : "STARTED");
            session.config().buffers().forEach(b -> entry.addBufferSizeKb((int) (b.sizeBytes() / 1024)));
            entry.setDurationMs((int) session.config().durationMs());
            entry.setStartRealtimeNs(startRealtimeNs);
            entry.setNumDataSources(session.config().dataSources().size() - session.dataSourcesNotStarted());
            if (!session.isStopped()) {
                entry.setIsStarted(true);
            }
        }));
    }

    void addDataSource(int producerId, String name) {
        entries.add(entry(state -> {
            TracingServiceState.DataSource dataSource = state.addDataSources();
            dataSource.setDsDescriptor().setName(name);
            dataSource.setProducerId(producerId);
        }));
    }

    /** The entries too large for any reply, which {@link #send} leaves out. */
    int tooLarge() {
        int count = 0;
        for (byte[] entry : entries) {
            if (entry.length >= MAX_STATE_REPLY) {
                count++;
            }
        }
        return count;
    }

    /**
     * Sends the replies, the first starting with what {@code scalars} writes, leaving out
     * the entries too large for any reply.
     */
    void send(Invocation invocation, Consumer<TracingServiceState> scalars) {
        ByteArrayOutputStream chunk = new ByteArrayOutputStream();
        chunk.writeBytes(entry(scalars));
        for (byte[] entry : entries) {
            if (entry.length >= MAX_STATE_REPLY) {
                continue;
            }
            if (chunk.size() + entry.length >= MAX_STATE_REPLY) {
                invocation.replyMore(reply(chunk.toByteArray()));
                chunk.reset();
            }
            chunk.writeBytes(entry);
        }
        invocation.reply(reply(chunk.toByteArray()));
    }

    private static byte[] entry(Consumer<TracingServiceState> fill) {
        HeapBuffered<TracingServiceState> state = new HeapBuffered<>(TracingServiceState.FACTORY);
        fill.accept(state.get());
        return state.toByteArray();
    }

    private static byte[] reply(byte[] state) {
        HeapBuffered<QueryServiceStateResponse> reply = new HeapBuffered<>(QueryServiceStateResponse.FACTORY);
        reply.get().appendBytes(QueryServiceStateResponse.SERVICE_STATE_FIELD_NUMBER, state);
        return reply.toByteArray();
    }
}
