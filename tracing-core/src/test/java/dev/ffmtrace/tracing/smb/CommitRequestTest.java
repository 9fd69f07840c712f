package dev.ffmtrace.tracing.smb;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.perfetto.protos.CommitDataRequest;
import dev.ffmtrace.protozero.HeapBuffered;
import dev.ffmtrace.protozero.RepeatedFieldIterator;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import org.junit.jupiter.api.Test;

class CommitRequestTest {
    @Test
    void writesPerfettosCommitDataRequestBytes() {
        CommitRequest request = new CommitRequest();
        request.addChunkToMove(1, 2, 3);
        request.addPatch(3, 4, 5, 6, 0x04030201, false);
        request.addPatch(3, 4, 5, 10, 0x7f808080, true);
        request.addPatch(3, 4, 7, 0, 0x00808081, false);
        HeapBuffered<CommitDataRequest> heap = new HeapBuffered<>(CommitDataRequest.FACTORY);
        request.writeTo(heap.get());
        // chunks_to_move {page 1 chunk 2 target_buffer 3}
        // chunks_to_patch {target_buffer 3 writer_id 4 chunk_id 5 patches {offset 6 data 01020304}
        //                  patches {offset 10 data 8080807f} has_more_patches true}
        // chunks_to_patch {target_buffer 3 writer_id 4 chunk_id 7 patches {offset 0 data 81808000}}
        String expected = "0a06" + "080110021803"
                + "121c" + "080310041805" + "2208" + "0806" + "120401020304" + "2208" + "080a" + "12048080807f" + "2801"
                + "1210" + "080310041807" + "2208" + "0800" + "120481808000";
        assertArrayEquals(HexFormat.of().parseHex(expected), heap.toByteArray());
    }

    @Test
    void anEmulatedChunkCarriesItsBytes() {
        CommitRequest request = new CommitRequest();
        request.addChunkToMove(1, 0, 3, MemorySegment.ofArray(new byte[] {(byte) 0xaa, (byte) 0xbb}));
        HeapBuffered<CommitDataRequest> heap = new HeapBuffered<>(CommitDataRequest.FACTORY);
        request.writeTo(heap.get());
        // chunks_to_move {page 1 chunk 0 target_buffer 3 data aabb}
        assertArrayEquals(HexFormat.of().parseHex("0a0a" + "080110001803" + "2202aabb"), heap.toByteArray());
    }

    /**
     * Written in parts under a bound, a request comes out as parts of at most that many
     * bytes, a patch run never cut, which together say what the request written whole
     * says, in the same order: the service applies the same commit.
     */
    @Test
    void aLargeRequestIsWrittenInPartsThatAddUpToIt() {
        CommitRequest request = new CommitRequest();
        for (int i = 0; i < 70; i++) {
            byte[] chunk = new byte[4096];
            chunk[0] = (byte) i;
            request.addChunkToMove(i, 0, 1, MemorySegment.ofArray(chunk));
        }
        for (int chunkId = 0; chunkId < 3; chunkId++) {
            for (int p = 0; p < 200; p++) {
                request.addPatch(1, 7, chunkId, 4 * p, p, p == 199 && chunkId == 2);
            }
        }
        HeapBuffered<CommitDataRequest> whole = new HeapBuffered<>(CommitDataRequest.FACTORY);
        request.writeTo(whole.get());
        List<String> inParts = new ArrayList<>();
        int parts = 0;
        for (int next = 0; next < request.entries(); parts++) {
            HeapBuffered<CommitDataRequest> part = new HeapBuffered<>(CommitDataRequest.FACTORY);
            next = request.writeTo(part.get(), next, CommitRequest.MAX_COMMIT_BYTES);
            byte[] bytes = part.toByteArray();
            assertTrue(bytes.length <= CommitRequest.MAX_COMMIT_BYTES, "part " + parts + ": " + bytes.length);
            inParts.addAll(entries(bytes));
        }
        assertEquals(3, parts, "70 chunks of 4 KiB and 600 patches in 128 KiB frames");
        List<String> inOne = entries(whole.toByteArray());
        assertEquals(73, inOne.size());
        assertEquals(inOne, inParts);
        HeapBuffered<CommitDataRequest> lone = new HeapBuffered<>(CommitDataRequest.FACTORY);
        assertEquals(1, request.writeTo(lone.get(), 0, 10), "an entry larger than the bound still goes alone");
        assertThrows(IndexOutOfBoundsException.class, () -> request.writeTo(lone.get(), request.entries() + 1, 10));
    }

    /** A CommitData's chunks to move and to patch, in order, as text. */
    private static List<String> entries(byte[] commit) {
        CommitDataRequest.Decoder decoder = new CommitDataRequest.Decoder();
        decoder.reset(MemorySegment.ofArray(commit));
        List<String> entries = new ArrayList<>();
        RepeatedFieldIterator moves = decoder.chunksToMove(new RepeatedFieldIterator());
        CommitDataRequest.ChunksToMove.Decoder move = new CommitDataRequest.ChunksToMove.Decoder();
        while (moves.next()) {
            move.reset(moves.field());
            entries.add("move " + move.page() + "/" + move.chunk() + " to " + move.targetBuffer() + ": "
                    + Arrays.hashCode(move.data()));
        }
        RepeatedFieldIterator chunks = decoder.chunksToPatch(new RepeatedFieldIterator());
        CommitDataRequest.ChunkToPatch.Decoder chunk = new CommitDataRequest.ChunkToPatch.Decoder();
        CommitDataRequest.ChunkToPatch.Patch.Decoder patch = new CommitDataRequest.ChunkToPatch.Patch.Decoder();
        while (chunks.next()) {
            chunk.reset(chunks.field());
            StringBuilder text = new StringBuilder("patch " + chunk.writerId() + "/" + chunk.chunkId() + " in "
                    + chunk.targetBuffer() + " more " + chunk.hasMorePatches() + ":");
            RepeatedFieldIterator patches = chunk.patches(new RepeatedFieldIterator());
            while (patches.next()) {
                patch.reset(patches.field());
                text.append(' ').append(patch.offset()).append('=').append(HexFormat.of().formatHex(patch.data()));
            }
            entries.add(text.toString());
        }
        assertFalse(decoder.hasError());
        return entries;
    }

    @Test
    void aRequestSizedAheadHoldsThatManyAndGrowsPastThem() {
        assertThrows(IllegalArgumentException.class, () -> new CommitRequest(0));
        CommitRequest request = new CommitRequest(2);
        for (int i = 0; i < 5; i++) {
            request.addChunkToMove(i, 0, 1);
            request.addPatch(1, 1, i, 4 * i, i, false);
        }
        assertEquals(5, request.chunksToMove());
        assertEquals(4, request.movePage(4));
        assertEquals(5, request.patches());
        assertEquals(16, request.patchOffset(4));
    }

    @Test
    void entriesAreReusedAndBoundChecked() {
        CommitRequest request = new CommitRequest();
        for (int i = 0; i < 100; i++) {
            request.addChunkToMove(i, i % 14, 0);
        }
        assertEquals(100, request.chunksToMove());
        assertEquals(99, request.movePage(99));
        request.clear();
        assertEquals(true, request.isEmpty());
        assertThrows(IndexOutOfBoundsException.class, () -> request.movePage(0));
    }
}
