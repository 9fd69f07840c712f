package dev.ffmtrace.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.tracing.consumer.ConsumerConnection;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue #27: SIGTERM ends {@code serve} whatever its clients do. With a producer that never
 * takes a command (so never acknowledges a flush or a stop), a session writing into a pipe
 * that is full and never read, and a consumer that never reads its replies, all at once,
 * the daemon still closes every session and socket and prints "stopped" before its
 * shutdown hook gives up (which would end the JVM without that line).
 */
class ServeShutdownTest {
    @TempDir
    Path dir;

    @Test
    void sigtermEndsServeThoughAProducerAnOutputAndAConsumerAllStall() throws Exception {
        Path consumerSocket = dir.resolve("consumer.sock");
        Path producerSocket = dir.resolve("producer.sock");
        CliProcess serve = CliProcess.start("serve", "--no-warm-up", "--consumer-socket", consumerSocket.toString(),
                "--producer-socket", producerSocket.toString());
        serve.awaitLine(line -> line.equals("consumer socket: " + consumerSocket));
        try (ServeAttackers attackers = new ServeAttackers(consumerSocket, producerSocket, dir)) {
            attackers.deafProducer();
            CompletableFuture<ConsumerConnection.TracingDisabled> disabled = attackers.sessionIntoAFullPipe("stuck");
            attackers.deafConsumer();

            long start = System.nanoTime();
            serve.kill("TERM");
            ConvertAndDumpTest.Run end = serve.await();
            System.out.println("serve ended " + (System.nanoTime() - start) / 1_000_000 + " ms after SIGTERM");
            assertEquals(143, end.exit(), end.err());
            assertTrue(end.out().contains("stopping on a signal"), end.out());
            assertTrue(end.out().lines().anyMatch(line -> line.equals("stopped")), "every session and socket closed: "
                    + end.out());
            assertFalse(Files.exists(consumerSocket));
            assertFalse(Files.exists(producerSocket));
            assertTrue(disabled.isDone(), "the session's owner heard it end");
        }
    }
}
