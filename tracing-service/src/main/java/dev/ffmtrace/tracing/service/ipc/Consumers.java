package dev.ffmtrace.tracing.service.ipc;

import dev.ffmtrace.ipc.ClientInfo;
import dev.ffmtrace.perfetto.protos.TraceConfig;
import dev.ffmtrace.tracing.service.TracingSession;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;

/**
 * The consumer port's consumers by connection, and those gone whose workers still free
 * their sessions (the port's close waits for them). Safe from any thread.
 */
final class Consumers {
    private final Map<Long, RemoteConsumer> byClient = new ConcurrentHashMap<>();
    private final Set<RemoteConsumer> ending = ConcurrentHashMap.newKeySet();

    /** {@code client}'s consumer, made by {@code make} on its first request. */
    RemoteConsumer of(ClientInfo client, Function<ClientInfo, RemoteConsumer> make) {
        return byClient.computeIfAbsent(client.clientId(), id -> make.apply(client));
    }

    /** Forgets {@code client}'s consumer and returns it; null if it never made a request. */
    RemoteConsumer remove(long clientId) {
        return byClient.remove(clientId);
    }

    /** The consumers connected now, a live view. */
    Collection<RemoteConsumer> connected() {
        return byClient.values();
    }

    void ending(RemoteConsumer consumer) {
        ending.add(consumer);
    }

    void ended(RemoteConsumer consumer) {
        ending.remove(consumer);
    }

    /** The consumers gone whose workers have not ended yet. */
    List<RemoteConsumer> stillEnding() {
        return List.copyOf(ending);
    }

    /** The consumer whose session is {@code sessionId}, or, with id 0, that names it {@code uniqueName}; null if none. */
    RemoteConsumer sessionOwner(long sessionId, String uniqueName) {
        for (RemoteConsumer consumer : byClient.values()) {
            TracingSession session = consumer.session();
            if (session == null) {
                continue;
            }
            if (sessionId != 0 ? consumer.sessionId() == sessionId : uniqueName.equals(uniqueSessionName(session))) {
                return consumer;
            }
        }
        return null;
    }

    private static String uniqueSessionName(TracingSession session) {
        TraceConfig.Decoder config = new TraceConfig.Decoder();
        config.reset(session.config().traceConfig());
        return config.hasUniqueSessionName() ? config.uniqueSessionName() : "";
    }
}
