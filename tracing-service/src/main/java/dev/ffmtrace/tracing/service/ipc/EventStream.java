package dev.ffmtrace.tracing.service.ipc;

import dev.ffmtrace.ipc.Invocation;
import dev.ffmtrace.perfetto.protos.ObservableEvents;
import dev.ffmtrace.perfetto.protos.ObserveEventsResponse;
import dev.ffmtrace.tracing.service.Producer;
import dev.ffmtrace.tracing.service.SessionConfig;
import dev.ffmtrace.tracing.service.TracingSession;
import dev.ffmtrace.tracing.service.TriggerHit;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * A consumer's ObserveEvents stream, as Perfetto's service feeds it: the events the
 * consumer asked for (data source instances started and stopped, all data sources
 * started, once per session, and CLONE_SNAPSHOT triggers due), each a streamed reply.
 * Used on its consumer's worker only.
 */
final class EventStream {
    private Invocation reply;
    private int mask;
    /** Whether the current session's ALL_DATA_SOURCES_STARTED went out: it goes once per session. */
    private boolean allStartedTold;

    /** Opens the stream for the events in {@code mask} (Perfetto's ObservableEvents.Type bits), ending an earlier one. */
    void open(Invocation invocation, int mask) {
        close();
        if (mask == 0) {
            invocation.reply(new byte[0]);
            return;
        }
        this.reply = invocation;
        this.mask = mask;
    }

    /** Ends the stream, if open, with an empty last reply. */
    void close() {
        if (reply != null) {
            reply.reply(new byte[0]);
            reply = null;
        }
    }

    /** A new session of the consumer: its ALL_DATA_SOURCES_STARTED is still to be told. */
    void sessionStarted() {
        allStartedTold = false;
    }

    private boolean wants(ObservableEvents.Type type) {
        return reply != null && (mask & type.number()) != 0;
    }

    /** Tells the observer, once per session, if every data source of {@code session}'s config runs now. */
    void allDataSourcesStarted(TracingSession session) {
        if (session == null || allStartedTold || !wants(ObservableEvents.Type.TYPE_ALL_DATA_SOURCES_STARTED)
                || !session.isStarted() || session.isStopped() || session.dataSourcesNotStarted() != 0) {
            return;
        }
        allStartedTold = true;
        reply.replyMore(Requests.message(ObserveEventsResponse.FACTORY,
                response -> response.setEvents().setAllDataSourcesStarted(true)));
    }

    /**
     * Tells an observer of CLONE_TRIGGER_HIT that a CLONE_SNAPSHOT trigger of session
     * {@code sessionId} is due: the consumer (Perfetto's command line) clones the session then.
     */
    void cloneTriggerHit(long sessionId, TriggerHit hit) {
        if (!wants(ObservableEvents.Type.TYPE_CLONE_TRIGGER_HIT)) {
            return;
        }
        reply.replyMore(Requests.message(ObserveEventsResponse.FACTORY, response -> {
            ObservableEvents.CloneTriggerHit event = response.setEvents().setCloneTriggerHit();
            event.setTracingSessionId(sessionId);
            event.setTriggerName(hit.name());
            event.setProducerName(hit.producerName());
            event.setProducerUid(hit.producerUid());
            event.setBootTimeNs(hit.bootTimeNanos());
            event.setTriggerDelayMs(hit.stopDelayMs());
        }));
    }

    /**
     * Tells an observer of data source instances that each of {@code session}'s instances
     * ({@code registered}: the service's producers and their data sources) is in {@code state};
     * for STARTED, only those running now.
     */
    void instances(TracingSession session, ObservableEvents.DataSourceInstanceState state,
            Map<Producer, List<String>> registered) {
        boolean starting = state == ObservableEvents.DataSourceInstanceState.DATA_SOURCE_INSTANCE_STATE_STARTED;
        if (!wants(ObservableEvents.Type.TYPE_DATA_SOURCES_INSTANCES) || (starting && !session.isStarted())) {
            return;
        }
        List<String> notStarted = session.warnings().stream().map(w -> w.dataSource()).toList();
        List<String[]> instances = new ArrayList<>();
        for (SessionConfig.DataSource wanted : session.config().dataSources()) {
            if (starting && notStarted.contains(wanted.name())) {
                continue;
            }
            registered.forEach((producer, names) -> {
                if (names.contains(wanted.name())) {
                    instances.add(new String[] {producer.name(), wanted.name()});
                }
            });
        }
        if (instances.isEmpty()) {
            return;
        }
        reply.replyMore(Requests.message(ObserveEventsResponse.FACTORY, response -> {
            ObservableEvents events = response.setEvents();
            for (String[] instance : instances) {
                ObservableEvents.DataSourceInstanceStateChange change = events.addInstanceStateChanges();
                change.setProducerName(instance[0]);
                change.setDataSourceName(instance[1]);
                change.setState(state);
            }
        }));
    }
}
