package dev.ffmtrace.tracing.service;

import dev.ffmtrace.tracing.buffer.ClientIdentity;
import dev.ffmtrace.tracing.smb.abi.SharedMemoryAbiDescriptor;
import java.util.Objects;

/**
 * How {@link TracingService#connectProducer} connects a producer: its name, the trusted
 * identity of its process, and the size and page size of its shared memory buffer (SMB).
 * Start from {@link #of(String)}, which takes Perfetto's defaults, and change what differs:
 * {@code ProducerOptions.of("app").withSmbSize(4 << 20)}.
 *
 * <p>The constructor checks every field, so an options value is always one the service
 * accepts; a wither that would break a rule throws, naming the argument and the rule.
 *
 * @param name the producer's name, in messages and in its SMB's memfd name; not blank
 * @param identity the trusted uid and pid of the producer's process, from its connection's
 *        peer credentials (for an in-process producer, {@link ClientIdentity#self()})
 * @param smbSize the SMB's size in bytes: a positive multiple of {@code pageSize}, at most
 *        {@value #MAX_SMB_SIZE}
 * @param pageSize the SMB's page size: 4096..65536 in steps of 4096, as Perfetto's shared
 *        memory ABI allows
 * @param machineName the name a relay gave the producer's machine, which a session's
 *        {@code machine_name_filter} matches; empty for this machine
 */
record ProducerOptions(String name, ClientIdentity identity, long smbSize, int pageSize, String machineName) {
    /** Perfetto's default SMB size (its service's {@code kDefaultShmSize}): 256 KiB. */
    public static final long DEFAULT_SMB_SIZE = 256 * 1024;
    /** The largest SMB Perfetto's service gives a producer ({@code kMaxShmSize}): 32 MiB. */
    public static final long MAX_SMB_SIZE = 32 * 1024 * 1024;
    /** Perfetto's default SMB page size ({@code kDefaultShmPageSize}): 4 KiB. */
    public static final int DEFAULT_PAGE_SIZE = SharedMemoryAbiDescriptor.MIN_PAGE_SIZE;

    /** Options for a producer on this machine. */
    public ProducerOptions(String name, ClientIdentity identity, long smbSize, int pageSize) {
        this(name, identity, smbSize, pageSize, "");
    }

    /**
     * Checks every field.
     *
     * @throws NullPointerException if {@code name} or {@code identity} is null
     * @throws IllegalArgumentException if {@code name} is blank, or a size breaks its rule
     */
    public ProducerOptions {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(identity, "identity");
        Objects.requireNonNull(machineName, "machineName");
        if (name.isBlank()) {
            throw new IllegalArgumentException("name must not be blank");
        }
        if (!SharedMemoryAbiDescriptor.isValidPageSize(pageSize)) {
            throw new IllegalArgumentException("pageSize must be " + SharedMemoryAbiDescriptor.MIN_PAGE_SIZE + ".."
                    + SharedMemoryAbiDescriptor.MAX_PAGE_SIZE + " in steps of " + SharedMemoryAbiDescriptor.MIN_PAGE_SIZE
                    + " (Perfetto's SMB page sizes), got " + pageSize);
        }
        if (smbSize <= 0 || smbSize % pageSize != 0) {
            throw new IllegalArgumentException("smbSize must be a positive multiple of pageSize " + pageSize
                    + ", got " + smbSize);
        }
        if (smbSize > MAX_SMB_SIZE) {
            throw new IllegalArgumentException("smbSize must be at most " + MAX_SMB_SIZE + " (32 MiB), got " + smbSize);
        }
    }

    /**
     * Options for a producer in this process: {@link ClientIdentity#self()}, an SMB of
     * {@value #DEFAULT_SMB_SIZE} bytes in pages of {@value #DEFAULT_PAGE_SIZE}.
     */
    public static ProducerOptions of(String name) {
        return new ProducerOptions(name, ClientIdentity.self(), DEFAULT_SMB_SIZE, DEFAULT_PAGE_SIZE);
    }

    /** These options with another identity: a producer in another process, from its peer credentials. */
    public ProducerOptions withIdentity(ClientIdentity identity) {
        return new ProducerOptions(name, identity, smbSize, pageSize, machineName);
    }

    /** These options with an SMB of {@code smbSize} bytes: a positive multiple of the page size. */
    public ProducerOptions withSmbSize(long smbSize) {
        return new ProducerOptions(name, identity, smbSize, pageSize, machineName);
    }

    /** These options with SMB pages of {@code pageSize} bytes; the SMB size must stay a multiple of it. */
    public ProducerOptions withPageSize(int pageSize) {
        return new ProducerOptions(name, identity, smbSize, pageSize, machineName);
    }
}
