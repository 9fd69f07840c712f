package dev.ffmtrace.heapprofd.wire;

/**
 * The byte layouts of heapprofd's wire (Perfetto's {@code src/profiling/memory/wire_protocol.h}),
 * little-endian, identical on x86-64 and i386.
 *
 * <p>A SharedRingBuffer record is a record type followed by its body:
 * <pre>
 *   0        8                                                         8 + body
 *   +--------+---------------------------------------------------------+---------------+
 *   | type   | Free: FreeEntry (24) | Malloc: AllocMetadata (328) | HeapName (80) | Malloc: stack |
 *   +--------+---------------------------------------------------------+---------------+
 * </pre>
 * AllocMetadata (328, 8-aligned):
 * <pre>
 *   0 sequence_number   8 alloc_size   16 sample_size   24 alloc_address
 *   32 stack_pointer (where the stack copy starts)   40 clock_monotonic_coarse_timestamp (ns)
 *   48 register_data[272]   320 heap_id (u32)   324 arch (u8)   325 padding[3]
 * </pre>
 * FreeEntry (24): {@code 0 sequence_number, 8 addr, 16 heap_id (u32), 20 padding}.
 * HeapName (80): {@code 0 sample_interval, 8 heap_id (u32), 12 heap_name[64] (NUL-terminated), 76 padding}.
 *
 * <p>ClientConfiguration (4656), sent as raw bytes over the control socket, never in the ring:
 * <pre>
 *   0 default_interval   8 block_client_timeout_us   16 num_heaps
 *   24 adaptive_sampling_shmem_threshold   32 adaptive_sampling_max_sampling_interval_bytes
 *   40 heaps[64]: each name[64] then interval (u64), 72 bytes
 *   4648 block_client   4649 disable_fork_teardown   4650 disable_vfork_detection   4651 all_heaps
 *   4652 padding[4]
 * </pre>
 */
final class HeapprofdWireDescriptor {
    static final long RECORD_TYPE_FREE = 0;
    static final long RECORD_TYPE_MALLOC = 1;
    static final long RECORD_TYPE_HEAP_NAME = 2;
    static final int RECORD_TYPE_SIZE = 8;

    static final int ALLOC_SEQUENCE_NUMBER_OFFSET = 0;
    static final int ALLOC_SIZE_OFFSET = 8;
    static final int ALLOC_SAMPLE_SIZE_OFFSET = 16;
    static final int ALLOC_ADDRESS_OFFSET = 24;
    static final int ALLOC_STACK_POINTER_OFFSET = 32;
    static final int ALLOC_TIMESTAMP_OFFSET = 40;
    static final int ALLOC_REGISTER_DATA_OFFSET = 48;
    /** The largest register set of any architecture: arm64's 34 eight-byte registers. */
    static final int MAX_REGISTER_DATA_SIZE = 272;
    static final int ALLOC_HEAP_ID_OFFSET = 320;
    static final int ALLOC_ARCH_OFFSET = 324;
    static final int ALLOC_METADATA_SIZE = 328;

    static final int FREE_SEQUENCE_NUMBER_OFFSET = 0;
    static final int FREE_ADDRESS_OFFSET = 8;
    static final int FREE_HEAP_ID_OFFSET = 16;
    static final int FREE_ENTRY_SIZE = 24;

    static final int HEAP_NAME_INTERVAL_OFFSET = 0;
    static final int HEAP_NAME_HEAP_ID_OFFSET = 8;
    static final int HEAP_NAME_NAME_OFFSET = 12;
    /** Bytes for a heap's name, its terminating NUL included (HEAPPROFD_HEAP_NAME_SZ). */
    static final int HEAP_NAME_CAPACITY = 64;
    static final int HEAP_NAME_SIZE = 80;

    static final int CONFIG_DEFAULT_INTERVAL_OFFSET = 0;
    static final int CONFIG_BLOCK_CLIENT_TIMEOUT_US_OFFSET = 8;
    static final int CONFIG_NUM_HEAPS_OFFSET = 16;
    static final int CONFIG_ADAPTIVE_THRESHOLD_OFFSET = 24;
    static final int CONFIG_ADAPTIVE_MAX_INTERVAL_OFFSET = 32;
    static final int CONFIG_HEAPS_OFFSET = 40;
    static final int CONFIG_HEAP_SIZE = 72;
    static final int CONFIG_HEAP_INTERVAL_OFFSET = 64;
    static final int CONFIG_MAX_HEAPS = 64;
    static final int CONFIG_BLOCK_CLIENT_OFFSET = 4648;
    static final int CONFIG_DISABLE_FORK_TEARDOWN_OFFSET = 4649;
    static final int CONFIG_DISABLE_VFORK_DETECTION_OFFSET = 4650;
    static final int CONFIG_ALL_HEAPS_OFFSET = 4651;
    static final int CLIENT_CONFIGURATION_SIZE = 4656;

    private HeapprofdWireDescriptor() {
    }
}
