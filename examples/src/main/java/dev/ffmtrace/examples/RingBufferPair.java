package dev.ffmtrace.examples;

import dev.ffmtrace.memory.Seals;
import dev.ffmtrace.shmring.RecordSlot;
import dev.ffmtrace.shmring.SharedRingBuffer;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;

/** heapprofd's SharedRingBuffer: one side creates it, a second handle attaches, writes records, the first reads them. */
public final class RingBufferPair {
    public static void main(String[] args) {
        // The service creates the ring in a sealed memfd. A client would get ring.fd() over a
        // Unix socket; here a second handle attaches to it (attach maps a duplicate of the fd).
        try (SharedRingBuffer ring = SharedRingBuffer.create(64 * 1024);
             SharedRingBuffer client = SharedRingBuffer.attach(ring.fd(), Seals.REQUIRED)) {
            for (int i = 0; i < 3; i++) {
                byte[] record = ("record " + i).getBytes(StandardCharsets.UTF_8);
                SharedRingBuffer.WriteResult result = client.tryWrite(record);   // any thread, no slot
                if (result != SharedRingBuffer.WriteResult.OK) {
                    System.out.println("not written: " + result);               // e.g. NO_SPACE: retry later
                }
            }
            RecordSlot slot = ring.newSlot();                                    // the one reader's slot
            while (ring.beginRead(slot) == SharedRingBuffer.ReadResult.OK) {     // read until NO_DATA
                byte[] bytes = slot.payload().toArray(ValueLayout.JAVA_BYTE);    // peer memory: copy it
                ring.endRead(slot);
                System.out.println("read: " + new String(bytes, StandardCharsets.UTF_8));
            }
        }
    }
}
