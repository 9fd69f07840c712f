package dev.ffmtrace.examples;

import dev.ffmtrace.memory.Os;
import dev.ffmtrace.tracing.producer.DataSourceDescriptor;
import dev.ffmtrace.tracing.producer.DataSourceHandler;
import dev.ffmtrace.tracing.producer.DataSourceInstance;
import dev.ffmtrace.tracing.producer.ProducerConnection;
import dev.ffmtrace.tracing.smb.BufferExhaustedPolicy;
import dev.ffmtrace.tracing.trackevent.Category;
import dev.ffmtrace.tracing.trackevent.InternedName;
import dev.ffmtrace.tracing.trackevent.TraceWriterSink;
import dev.ffmtrace.tracing.trackevent.Track;
import dev.ffmtrace.tracing.trackevent.TrackEventWriter;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;

/** Joins a Perfetto tracing service (traced, or ffmtrace's) as the producer of data source track_event. */
public final class JoinTracingService {
    static final Category APP = new Category("app");
    static final InternedName WORK = InternedName.of("work");

    public static void main(String[] args) throws InterruptedException {
        // The producer socket: the argument, else PERFETTO_PRODUCER_SOCK_NAME, else Perfetto's default.
        ProducerConnection.Options options = ProducerConnection.Options.named("join-example");
        if (args.length > 0) {
            options = options.withSocket(ProducerConnection.socketAddress(args[0]));
        }
        CountDownLatch stopped = new CountDownLatch(1);
        AtomicBoolean stop = new AtomicBoolean();
        try (ProducerConnection connection = ProducerConnection.connect(options)) {   // connects in the background
            connection.registerDataSource(DataSourceDescriptor.named("track_event"), new DataSourceHandler() {
                private Thread worker;

                @Override
                public void onStart(DataSourceInstance instance) {               // a session selected track_event
                    worker = Thread.ofPlatform().start(() -> {
                        Track thread = Track.thread(Track.process(Os.pid(), "join example"), Os.tid(), "worker");
                        TraceWriterSink sink = new TraceWriterSink(                 // cleared when the service asks
                                instance.newTraceWriter(BufferExhaustedPolicy.DROP), instance::incrementalStateClears);
                        try (TrackEventWriter writer = new TrackEventWriter(sink, TrackEventWriter.Config.forThread(thread))) {
                            while (!stop.get()) {
                                long slice = writer.beginSlice(APP, thread, WORK);
                                Thread.onSpinWait();                             // the traced work
                                writer.endSlice(thread, slice);
                            }
                        }
                    });
                }

                @Override
                public void onStop(DataSourceInstance instance, Runnable done) {  // the session ends
                    stop.set(true);
                    Thread.ofPlatform().start(() -> {                            // not on the connection's thread
                        try {
                            worker.join();
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                        }
                        done.run();                                              // commits, then tells the service
                        stopped.countDown();
                    });
                }
            });
            stopped.await();
        }
    }
}
