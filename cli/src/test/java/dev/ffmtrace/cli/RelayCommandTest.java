package dev.ffmtrace.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.ipc.MachineIds;
import dev.ffmtrace.memory.Os;
import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.perfetto.protos.Trace;
import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.protozero.RepeatedFieldIterator;
import dev.ffmtrace.tracing.producer.DataSourceDescriptor;
import dev.ffmtrace.tracing.producer.ProducerConnection;
import dev.ffmtrace.tracing.producer.internal.DataSourceHandler;
import dev.ffmtrace.tracing.producer.internal.DataSourceInstance;
import dev.ffmtrace.tracing.relay.ThisMachine;
import dev.ffmtrace.tracing.smb.BufferExhaustedPolicy;
import dev.ffmtrace.tracing.smb.TraceWriter;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code relay} between a producer and {@code serve}, each a process of its own, as a user runs them. */
class RelayCommandTest {
    @TempDir
    Path dir;

    /**
     * A producer on the relay's socket writes into a session of {@code serve} on a machine
     * of its own: its packets carry the machine id traced would derive from this machine's
     * boot id, with the producer's pid, and the host lists the machine's SystemInfo.
     */
    @Test
    void aProducerBehindTheRelayLandsOnItsMachineInTheHostsTrace() throws Exception {
        Path consumer = dir.resolve("consumer.sock");
        CliProcess serve = CliProcess.start("serve", "--no-warm-up", "--consumer-socket", consumer.toString(),
                "--producer-socket", dir.resolve("host.sock") + ",127.0.0.1:0", "--enable-relay-endpoint");
        CliProcess relay = null;
        try {
            String host = ServeTcpTest.tcpProducerSocket(serve).toString();
            Path guest = dir.resolve("guest.sock");
            relay = CliProcess.start("relay", "--relay-socket", host, "--producer-socket", guest.toString(),
                    "--machine-name", "guest-a");
            relay.awaitLine(line -> line.startsWith("relaying "));
            try (ProducerConnection producer = ProducerConnection.connect(
                    ProducerConnection.Options.named("behind-relay").withSocket(UnixAddress.path(guest)))) {
                producer.registerDataSource(DataSourceDescriptor.named("track_event"), new DataSourceHandler() {
                    @Override
                    public void onStart(DataSourceInstance instance) {
                    }

                    // Written at each flush (the service flushes at every stop): events however late the start.
                    @Override
                    public void onFlush(DataSourceInstance instance) {
                        try (TraceWriter<TracePacket> writer = instance.newTraceWriter(BufferExhaustedPolicy.DROP)) {
                            for (int i = 0; i < 100; i++) {
                                writer.newTracePacket().setTrackEvent().setName("relayed-" + i);
                                writer.finishTracePacket();
                            }
                        }
                    }
                });
                assertTrue(producer.awaitConnected(Duration.ofSeconds(CliProcess.TIMEOUT_SECONDS)));
                assertTrue(producer.sync().get(CliProcess.TIMEOUT_SECONDS, TimeUnit.SECONDS),
                        "the registration went through the relay");
                Path config = Files.writeString(dir.resolve("all.pbtxt"), """
                        buffers { size_kb: 1024 }
                        data_sources { config { name: "track_event" } }
                        trace_all_machines: true
                        duration_ms: 300
                        """);
                Path trace = dir.resolve("trace.pftrace");
                ConvertAndDumpTest.Run run = ConvertAndDumpTest.run("record", "--service", consumer.toString(),
                        "--config", config.toString(), "--out", trace.toString());
                assertEquals(0, run.exit(), run.err() + run.out());
                int machine = MachineIds.of(ThisMachine.bootId().getBytes(StandardCharsets.UTF_8), "127.0.0.1");
                List<String> stamps = stamps(Files.readAllBytes(trace));
                assertTrue(stamps.contains("system_info of " + machine), stamps.toString());
                List<String> events = stamps.stream().filter(s -> s.startsWith("event")).distinct().toList();
                assertEquals(List.of("event on " + machine + " from " + Os.pid()), events);
            }
        } finally {
            if (relay != null) {
                relay.kill("TERM");
                ConvertAndDumpTest.Run ended = relay.await();
                // Stopped in order on the signal, and the JVM then exits as signalled: 128 + 15.
                assertEquals(143, ended.exit(), ended.err());
                assertTrue(ended.out().endsWith("stopped\n"), ended.out());
            }
            serve.kill("TERM");
            serve.await();
        }
    }

    @Test
    void aHostThatIsNoAddressIsAUsageError() throws Exception {
        for (String host : new String[] {"vsock://3:9000", "127.0.0.1:http"}) {
            ConvertAndDumpTest.Run run = CliProcess.start("relay", "--relay-socket", host, "--producer-socket",
                    dir.resolve("guest.sock").toString()).await();
            assertEquals(CliFailure.USAGE, run.exit(), host + ": " + run.err());
            assertTrue(run.err().startsWith("ffmtrace relay: ") && run.err().lines().count() == 1, run.err());
        }
    }

    /** The packets that name another machine: its events (with the trusted pid) and its SystemInfo. */
    private static List<String> stamps(byte[] trace) {
        Trace.Decoder decoder = new Trace.Decoder();
        decoder.reset(MemorySegment.ofArray(trace));
        RepeatedFieldIterator packets = decoder.packet(new RepeatedFieldIterator());
        TracePacket.Decoder packet = new TracePacket.Decoder();
        List<String> stamps = new ArrayList<>();
        while (packets.next()) {
            packet.reset(packets.field());
            if (packet.hasTrackEvent()) {
                stamps.add("event on " + packet.machineId() + " from " + packet.trustedPid());
            } else if (packet.hasSystemInfo() && packet.hasMachineId()) {
                stamps.add("system_info of " + packet.machineId());
            }
        }
        return stamps;
    }
}
