package dev.ffmtrace.memory.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.memory.MemoryFile;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The leak check the fd-counting tests share: what was opened since shows, what was closed since does not. */
class OpenDescriptorsTest {
    @Test
    void aDescriptorOpenedSinceTheSnapshotShowsAndOneClosedSinceDoesNot() {
        MemoryFile earlier = MemoryFile.create("opened-before", 4096);
        OpenDescriptors before = OpenDescriptors.snapshot();
        earlier.close();
        assertEquals(List.of(), before.openedSince(), "a descriptor closed since is no leak");
        try (MemoryFile leaked = MemoryFile.create("opened-after", 4096)) {
            List<String> opened = before.openedSince();
            assertEquals(1, opened.size(), opened.toString());
            assertTrue(opened.getFirst().startsWith(leaked.fd() + "->/memfd:opened-after"), opened.toString());
        }
        assertEquals(List.of(), before.openedSince());
    }
}
