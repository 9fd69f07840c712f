package dev.ffmtrace.tracing.smb;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.ffmtrace.perfetto.protos.CommitDataRequest;
import dev.ffmtrace.protozero.HeapBuffered;
import java.util.HexFormat;
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
