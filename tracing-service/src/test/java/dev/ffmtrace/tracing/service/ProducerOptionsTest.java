package dev.ffmtrace.tracing.service;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.ffmtrace.tracing.buffer.ClientIdentity;
import org.junit.jupiter.api.Test;

class ProducerOptionsTest {
    @Test
    void ofTakesThisProcessAndPerfettosDefaults() {
        ProducerOptions options = ProducerOptions.of("app");
        assertEquals(new ProducerOptions("app", ClientIdentity.self(), 256 * 1024, 4096), options);
        assertEquals(ProcessHandle.current().pid(), options.identity().pid());
    }

    @Test
    void withersChangeOneFieldEach() {
        ClientIdentity other = new ClientIdentity(1000, 42);
        ProducerOptions options = ProducerOptions.of("app").withSmbSize(1 << 20).withPageSize(16384).withIdentity(other);
        assertEquals(new ProducerOptions("app", other, 1 << 20, 16384), options);
    }

    @Test
    void eachRuleIsRefusedNamingTheArgument() {
        ClientIdentity self = ClientIdentity.self();
        assertEquals("pageSize must be 4096..65536 in steps of 4096 (Perfetto's SMB page sizes), got 5000",
                assertThrows(IllegalArgumentException.class, () -> ProducerOptions.of("app").withPageSize(5000)).getMessage());
        assertEquals("pageSize must be 4096..65536 in steps of 4096 (Perfetto's SMB page sizes), got 131072",
                assertThrows(IllegalArgumentException.class, () -> new ProducerOptions("app", self, 1 << 20, 1 << 17)).getMessage());
        assertEquals("smbSize must be a positive multiple of pageSize 4096, got 10000",
                assertThrows(IllegalArgumentException.class, () -> ProducerOptions.of("app").withSmbSize(10_000)).getMessage());
        assertEquals("smbSize must be a positive multiple of pageSize 4096, got 0",
                assertThrows(IllegalArgumentException.class, () -> ProducerOptions.of("app").withSmbSize(0)).getMessage());
        assertEquals("smbSize must be a positive multiple of pageSize 8192, got 12288",
                assertThrows(IllegalArgumentException.class, () -> ProducerOptions.of("app").withSmbSize(3 * 4096)
                        .withPageSize(8192)).getMessage(), "a page size the SMB size is no multiple of");
        assertEquals("smbSize must be at most 33554432 (32 MiB), got 67108864",
                assertThrows(IllegalArgumentException.class, () -> ProducerOptions.of("app").withSmbSize(64 << 20)).getMessage());
        assertEquals("name must not be blank",
                assertThrows(IllegalArgumentException.class, () -> ProducerOptions.of(" ")).getMessage());
        assertEquals("name", assertThrows(NullPointerException.class, () -> ProducerOptions.of(null)).getMessage());
        assertEquals("identity",
                assertThrows(NullPointerException.class, () -> ProducerOptions.of("app").withIdentity(null)).getMessage());
    }

    @Test
    void theServiceGivesTheProducerAnSmbAsTheOptionsSay() {
        try (TracingService service = new TracingService()) {
            Producer producer = service.connectProducer(ProducerOptions.of("app").withSmbSize(32 * 8192).withPageSize(8192));
            assertEquals("app", producer.name());
            assertEquals(ClientIdentity.self(), producer.identity());
            assertEquals(8192, producer.arbiter().pageSize());
            assertEquals(32, producer.arbiter().numPages());
        }
    }
}
