package dev.ffmtrace.heapprofd.wire;

import dev.ffmtrace.memory.testing.CPrograms;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The records and the client configuration, encoded here and by a C program compiled with
 * the structs of {@code native/include/heapprofd_wire.h} (whose static asserts pin
 * Perfetto's sizes and offsets): the same bytes, both ways.
 */
class HeapprofdWireGoldenTest {
    private static final HexFormat HEX = HexFormat.of();

    /** The sample records of {@code heapprofd_wire_tool records}, encoded here. */
    static List<String> javaRecords() {
        AllocMetadata metadata = new AllocMetadata().sequenceNumber(7).allocSize(1000).sampleSize(4096)
                .allocAddress(0x7f0000001000L).stackPointer(0x7ffd00000000L).timestampNanos(123456789).heapId(2)
                .arch(AllocMetadata.ARCH_X86_64);
        for (int i = 0; i < WireRecords.MAX_REGISTER_DATA_SIZE; i++) {
            metadata.registers().set(ValueLayout.JAVA_BYTE, i, (byte) (i * 3));
        }
        byte[] stack = new byte[40];
        for (int i = 0; i < stack.length; i++) {
            stack[i] = (byte) (i ^ 0x5a);
        }
        MemorySegment malloc = MemorySegment.ofArray(new byte[(int) WireRecords.mallocRecordSize(stack.length)]);
        malloc.fill((byte) 0xEE);
        WireRecords.writeMalloc(malloc, 0, metadata, MemorySegment.ofArray(stack), 0, stack.length);
        MemorySegment free = MemorySegment.ofArray(new byte[WireRecords.FREE_RECORD_SIZE]);
        free.fill((byte) 0xEE);
        WireRecords.writeFree(free, 0, 8, 0x7f0000001000L, 2);
        MemorySegment heapName = MemorySegment.ofArray(new byte[WireRecords.HEAP_NAME_RECORD_SIZE]);
        heapName.fill((byte) 0xEE);
        WireRecords.writeHeapName(heapName, 0, 4096, 3, "java.ffm".getBytes(StandardCharsets.UTF_8));
        return List.of(hex(malloc), hex(free), hex(heapName));
    }

    static ClientConfiguration sampleConfiguration() {
        return new ClientConfiguration(4096, 500, 1 << 20, 1 << 22,
                List.of(new ClientConfiguration.Heap("libc.malloc", 4096), new ClientConfiguration.Heap("java.ffm", 1024)),
                true, false, true, false);
    }

    // Also with the tool built with ASan and UBSan, whose findings end it with a status other than 0.
    @ParameterizedTest(name = "sanitized: {0}")
    @ValueSource(booleans = {false, true})
    void recordsAreTheBytesTheCStructsMake(boolean sanitized) throws Exception {
        assertEquals(run(sanitized, "records", ""), javaRecords());
    }

    @ParameterizedTest(name = "sanitized: {0}")
    @ValueSource(booleans = {false, true})
    void theClientConfigurationIsTheBytesTheCStructMakesAndReadsBackEitherWay(boolean sanitized) throws Exception {
        MemorySegment encoded = MemorySegment.ofArray(new byte[ClientConfiguration.SIZE]);
        encoded.fill((byte) 0xEE);
        sampleConfiguration().encodeTo(encoded, 0);
        List<String> fromC = run(sanitized, "config", "");
        assertEquals(List.of(hex(encoded)), fromC);
        assertEquals(sampleConfiguration(), ClientConfiguration.decode(MemorySegment.ofArray(HEX.parseHex(fromC.getFirst())), 0));
        assertEquals(List.of(
                "default_interval=4096 block_client_timeout_us=500 num_heaps=2 threshold=1048576 max_interval=4194304",
                "heap libc.malloc=4096",
                "heap java.ffm=1024",
                "block_client=1 disable_fork_teardown=0 disable_vfork_detection=1 all_heaps=0"),
                run(sanitized, "read-config", hex(encoded)));
    }

    @Test
    void theCRecordsReadBackHere() throws Exception {
        List<String> records = run(false, "records", "");
        WireRecord reader = new WireRecord();
        MemorySegment malloc = MemorySegment.ofArray(HEX.parseHex(records.get(0)));
        assertEquals(WireRecord.Type.MALLOC, reader.read(malloc, 0, malloc.byteSize()));
        assertEquals(7, reader.alloc().sequenceNumber());
        assertEquals(1000, reader.alloc().allocSize());
        assertEquals(4096, reader.alloc().sampleSize());
        assertEquals(0x7ffd00000000L, reader.alloc().stackPointer());
        assertEquals(AllocMetadata.ARCH_X86_64, reader.alloc().arch());
        assertEquals(40, reader.stackSize());
        assertEquals((byte) (39 ^ 0x5a), reader.copyStack(malloc, 0).get(ValueLayout.JAVA_BYTE, 39));
        MemorySegment free = MemorySegment.ofArray(HEX.parseHex(records.get(1)));
        assertEquals(WireRecord.Type.FREE, reader.read(free, 0, free.byteSize()));
        assertEquals(8, reader.freeSequenceNumber());
        assertEquals(0x7f0000001000L, reader.freeAddress());
        assertEquals(2, reader.heapId());
        MemorySegment heapName = MemorySegment.ofArray(HEX.parseHex(records.get(2)));
        assertEquals(WireRecord.Type.HEAP_NAME, reader.read(heapName, 0, heapName.byteSize()));
        assertEquals("java.ffm", reader.heapName());
        assertEquals(3, reader.heapId());
        assertEquals(4096, reader.sampleInterval());
    }

    private static String hex(MemorySegment bytes) {
        return HEX.formatHex(bytes.toArray(ValueLayout.JAVA_BYTE));
    }

    private static List<String> run(boolean sanitized, String mode, String stdin) throws IOException, InterruptedException {
        String tool = (sanitized ? CPrograms.sanitized("heapprofd_wire_tool") : CPrograms.program("heapprofd_wire_tool")).toString();
        Process process = new ProcessBuilder(tool, mode)
                .redirectError(ProcessBuilder.Redirect.INHERIT).start();
        process.getOutputStream().write(stdin.getBytes(StandardCharsets.US_ASCII));
        process.getOutputStream().close();
        List<String> lines = new String(process.getInputStream().readAllBytes(), StandardCharsets.US_ASCII).lines().toList();
        assertTrue(process.waitFor(30, TimeUnit.SECONDS));
        assertEquals(0, process.exitValue());
        return lines;
    }
}
