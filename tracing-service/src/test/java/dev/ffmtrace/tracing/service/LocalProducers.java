package dev.ffmtrace.tracing.service;

/**
 * The service's own in-process producers for the tests of its other packages (the
 * consumer port's): what {@link TracingService#connectProducer} and
 * {@link Producer#registerDataSource(String)} give this package's tests, which
 * applications do not see.
 */
public final class LocalProducers {
    private LocalProducers() {
    }

    /** A producer named {@code name} with the default SMB. */
    public static Producer connect(TracingService service, String name) {
        return service.connectProducer(ProducerOptions.of(name));
    }

    /** A producer named {@code name} with an SMB of {@code smbSize} bytes. */
    public static Producer connect(TracingService service, String name, long smbSize) {
        return service.connectProducer(ProducerOptions.of(name).withSmbSize(smbSize));
    }

    /** Data source {@code name} of {@code producer}, offered to the sessions. */
    public static DataSource register(Producer producer, String name) {
        return producer.registerDataSource(name);
    }
}
