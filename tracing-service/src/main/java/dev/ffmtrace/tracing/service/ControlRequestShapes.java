package dev.ffmtrace.tracing.service;

import dev.ffmtrace.perfetto.protos.DataSourceDescriptor;
import dev.ffmtrace.perfetto.protos.RegisterDataSourceRequest;
import dev.ffmtrace.perfetto.protos.TraceConfig;
import dev.ffmtrace.protozero.HeapBuffered;
import java.lang.foreign.MemorySegment;

/**
 * The control requests a Perfetto SDK app and the {@code perfetto} command line send as a
 * session starts, decoded by the service's own parsers: for {@link CommitPathWarmUp},
 * which decodes them now and then among its commits.
 *
 * <p>The commit path's decoders share their compiled code with every other request's
 * ({@code TypedProtoDecoder.reset} and {@code field} are one method for all messages),
 * and the warm-up's commits never show a field the decoder does not know or a field
 * asked for that is absent. Compiled from that profile, those branches are traps: the SDK's
 * RegisterDataSource (a {@code track_event_descriptor} the service does not read) and
 * {@code perfetto}'s EnableTracing (optional fields left out) spring them just before the
 * app's first burst of commits, and the methods the commit path calls are thrown back to
 * the interpreter while the app writes (JFR: {@code unstable_if} deoptimizations in the
 * burst). Seen during the warm-up, the branches are compiled in.
 */
final class ControlRequestShapes {
    /** DataSourceDescriptor's track_event_descriptor: a field the service does not decode. */
    private static final int TRACK_EVENT_DESCRIPTOR = 6;
    /** TrackEventDescriptor's available_categories, and a category's name. */
    private static final int AVAILABLE_CATEGORIES = 1;
    private static final int CATEGORY_NAME = 1;
    /** A field id past any the service's TraceConfig decoder knows, as a newer perfetto may send. */
    private static final int UNKNOWN_TRACE_CONFIG_FIELD = 10_000;

    private static final byte[] REGISTER_TRACK_EVENT = registerTrackEvent();
    private static final byte[] PERFETTO_CONFIG = perfettoConfig();

    private ControlRequestShapes() {
    }

    /** Decodes each request once, as the service does when a client sends it. */
    static void decodeEach() {
        RegisterDataSourceRequest.Decoder request = new RegisterDataSourceRequest.Decoder();
        request.reset(MemorySegment.ofArray(REGISTER_TRACK_EVENT));
        DataSourceDescriptor.Decoder descriptor = new DataSourceDescriptor.Decoder();
        if (!request.dataSourceDescriptor(descriptor) || !descriptor.hasName()) {
            throw new IllegalStateException("the warm-up's own RegisterDataSource does not decode");
        }
        RemoteProducer.Descriptor.of(descriptor);
        try {
            SessionConfig.parse(MemorySegment.ofArray(PERFETTO_CONFIG));
        } catch (InvalidConfigException e) {
            throw new IllegalStateException("the warm-up's own TraceConfig is refused", e);
        }
    }

    /** RegisterDataSource for track_event as Perfetto's SDK sends it: with its categories described. */
    private static byte[] registerTrackEvent() {
        HeapBuffered<RegisterDataSourceRequest> request = new HeapBuffered<>(RegisterDataSourceRequest.FACTORY);
        DataSourceDescriptor descriptor = request.get().setDataSourceDescriptor();
        descriptor.setName("track_event");
        descriptor.setWillNotifyOnStop(true);
        descriptor.setHandlesIncrementalStateClear(true);
        // The service has no TrackEventDescriptor type: any message writes its bytes, whose
        // shape is all that matters here.
        HeapBuffered<TraceConfig> categories = new HeapBuffered<>(TraceConfig.FACTORY);
        for (String name : new String[] {"rendering", "network", "debug"}) {
            HeapBuffered<TraceConfig> category = new HeapBuffered<>(TraceConfig.FACTORY);
            category.get().appendString(CATEGORY_NAME, name);
            categories.get().appendBytes(AVAILABLE_CATEGORIES, category.toByteArray());
        }
        descriptor.appendBytes(TRACK_EVENT_DESCRIPTOR, categories.toByteArray());
        return request.toByteArray();
    }

    /** A TraceConfig as {@code perfetto --txt} sends one: a buffer, track_event with categories, a duration. */
    private static byte[] perfettoConfig() {
        HeapBuffered<TraceConfig> config = new HeapBuffered<>(TraceConfig.FACTORY);
        TraceConfig.BufferConfig buffer = config.get().addBuffers();
        buffer.setSizeKb(32 * 1024);
        buffer.setFillPolicy(TraceConfig.BufferConfig.FillPolicy.RING_BUFFER);
        var source = config.get().addDataSources().setConfig();
        source.setName("track_event");
        var trackEvent = source.setTrackEventConfig();
        trackEvent.addEnabledCategories("*");
        trackEvent.addEnabledTags("debug");
        config.get().setDurationMs(8000);
        config.get().appendVarInt(UNKNOWN_TRACE_CONFIG_FIELD, 1);
        return config.toByteArray();
    }
}
