package dev.ffmtrace.jvm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The converter's own reader of JFR files against the JDK's, on a real recording (every
 * park recorded, so that most events carry fields): the same trace byte for byte, and
 * damaged copies of it read as far as they go without anything thrown but the refusal of
 * what is no recording.
 */
class JfrFileReaderTest {
    @TempDir
    static Path dir;
    static Path recording;
    static byte[] bytes;

    @BeforeAll
    static void record() throws Exception {
        recording = JfrConverterTest.record(dir, KnownBehaviour.class, ",jdk.ThreadPark#threshold=0ms");
        bytes = Files.readAllBytes(recording);
        assertTrue(JfrFileReader.canRead(recording));
    }

    @Test
    void bothReadersConvertTheRecordingToTheSameBytes() throws IOException {
        assertSameConversion(recording);
    }

    @Test
    void bothReadersConvertChunksAfterTheFirstOnItsClock() throws IOException {
        // Recordings concatenate: the second chunk's constants, metadata and types are its own.
        byte[] twice = Arrays.copyOf(bytes, 2 * bytes.length);
        System.arraycopy(bytes, 0, twice, bytes.length, bytes.length);
        Path two = dir.resolve("twice.jfr");
        Files.write(two, twice);
        JfrConverter.Result result = assertSameConversion(two);
        JfrConverter.Result once = JfrConverter.convert(recording, new ByteArrayOutputStream(), events -> { });
        assertEquals(2 * once.events(), result.events());
    }

    private static JfrConverter.Result assertSameConversion(Path file) throws IOException {
        ByteArrayOutputStream own = new ByteArrayOutputStream();
        JfrConverter.Result ownResult = JfrConverter.convertReadingChunks(file, own, events -> { });
        ByteArrayOutputStream jdk = new ByteArrayOutputStream();
        JfrConverter.Result jdkResult = JfrConverter.convertWithRecordingFile(file, jdk, events -> { });
        assertNull(ownResult.unreadable());
        assertEquals(jdkResult, ownResult);
        assertTrue(ownResult.mapping().mapped() > 100, ownResult::toString);
        assertEquals(0, ownResult.mapping().malformed(), ownResult::toString);
        assertArrayEquals(jdk.toByteArray(), own.toByteArray());
        return ownResult;
    }

    @Test
    void aChunkCutShortIsNotReadAndSaysWhere() throws IOException {
        Path cut = dir.resolve("cut.jfr");
        Files.write(cut, Arrays.copyOf(bytes, bytes.length - 1));
        JfrConverter.UnreadableRecordingException refused = assertThrows(
                JfrConverter.UnreadableRecordingException.class,
                () -> JfrConverter.convertReadingChunks(cut, new ByteArrayOutputStream(), events -> { }));
        assertTrue(refused.getMessage().contains("bytes left in the file"), refused.getMessage());
    }

    @Test
    void damagedBytesAreReadAsFarAsTheyGoAndNothingElseIsThrown() throws IOException {
        Random random = new Random(29);
        Path damaged = dir.resolve("damaged.jfr");
        int unreadable = 0;
        int malformed = 0;
        for (int round = 0; round < 200; round++) {
            byte[] copy = bytes.clone();
            for (int flips = 1 + random.nextInt(4); flips > 0; flips--) {
                copy[random.nextInt(copy.length)] ^= (byte) (1 + random.nextInt(255));
            }
            Files.write(damaged, copy);
            try {
                JfrConverter.Result result = JfrConverter.convertReadingChunks(damaged, new ByteArrayOutputStream(),
                        events -> { });
                unreadable += result.unreadable() != null ? 1 : 0;
                malformed += result.mapping().malformed() > 0 ? 1 : 0;
            } catch (JfrConverter.UnreadableRecordingException e) {
                unreadable++;
            }
        }
        // Most flips land in event fields and go unnoticed or make one event malformed; the
        // count only shows that damage was met and answered.
        assertTrue(unreadable + malformed > 0, "no damage was noticed in 200 damaged copies");
    }
}
