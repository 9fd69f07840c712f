package dev.ffmtrace.shmring.abi;

/**
 * The bytes heapprofd's SharedRingBuffer shares between its client and its service,
 * laid out exactly as Perfetto's C++ lays them out (all little-endian).
 *
 * <p>The file is one metadata page (the runtime page size P) followed by the ring of S
 * bytes, S a power of two, a multiple of P and at least P. Perfetto uses only the first
 * 144 bytes of the metadata page; ffmtrace adds the spinlock's holder and a table after
 * them (*):
 *
 * <pre>
 *  byte  0        1          2             4                  8
 *        +--------+----------+-------------+------------------+
 *     0  | locked | poisoned | holder ns   | holder pid (*)   |  spinlock
 *        |        |          | slot (*)    |                  |
 *        +--------+----------+-------------+------------------+
 *     8  | read_pos                         (u64, free-running) |
 *    16  | write_pos                        (u64, free-running) |
 *    24  | client_spinlock_blocked_us                     (u64) |
 *    32  | failed_spinlocks                               (u64) |
 *    40  | error_state            (u64: 0 none, 1 timeout, 2 stack) |
 *    48  | shutting_down (u8) |  unused (7)                     |
 *    56  | reader_paused (u8) |  unused (7)                     |
 *        +----------------------------------------------------+
 *    64  | stats.bytes_written                                |
 *    72  | stats.num_writes_succeeded                         |
 *    80  | stats.num_writes_corrupt                           |
 *    88  | stats.num_writes_overflow                          |
 *    96  | stats.num_reads_succeeded                          |
 *   104  | stats.num_reads_corrupt                            |
 *   112  | stats.num_reads_nodata                             |
 *   120  | stats.failed_spinlocks          (never written; 0) |
 *   128  | stats.client_spinlock_blocked_us (never written; 0)|
 *   136  | stats.error_state               (never written; 0) |
 *        +----------------------------------------------------+
 *   144    end of Perfetto's metadata; Perfetto leaves bytes 144..P-1 unused
 *        +----------------------------------------------------+
 *   144  | PID namespace 1 (u64 inode of /proc/PID/ns/pid) (*) |
 *   152  | PID namespace 2                                    |
 *        | ...                                                |
 *   392  | PID namespace 32                                   |
 *        +----------------------------------------------------+
 *   400    bytes 400..P-1 unused
 * </pre>
 *
 * (*) ffmtrace's additions, in bytes Perfetto leaves as padding (2..7) or unused (144 on)
 * and never reads, so a Perfetto peer neither writes them nor is disturbed by them. The
 * holder of the spinlock records its pid and its PID namespace's slot (1 + its index in the
 * table at 144; 0 for unknown), and clears both before it unlocks; ffmtrace takes the lock
 * with one 8-byte compare-and-set that sets the locked byte and both together. The pid is
 * a number in the holder's PID namespace, so a waiter reads it only when the slot is its
 * own namespace's. Every process that maps the buffer enters its namespace in the table
 * (a compare-and-set of the first free entry, unless an entry already holds it); entries
 * are never changed or freed, and a full table leaves later namespaces at slot 0.
 *
 * <p>A record in the ring starts at an 8-aligned position:
 *
 * <pre>
 *  rel.  0          4          8                    8+len      stride
 *        +----------+----------+--------------------+----------+
 *        | length   | unused   | payload (len bytes)| pad 0..7 |
 *        | (u32)    | (stale)  |                    |          |
 *        +----------+----------+--------------------+----------+
 *  length 0 = reserved, not committed yet;  stride = (len + 8 + 7) &amp; ~7
 * </pre>
 */
public final class SharedRingBufferDescriptor {
    /** {@code std::atomic<uint8_t>}: 1 while someone holds the spinlock. */
    public static final int SPINLOCK_LOCKED_OFFSET = 0;
    /** {@code std::atomic<uint8_t>}: 1 once the spinlock is poisoned; never cleared. */
    public static final int SPINLOCK_POISONED_OFFSET = 1;
    /** u16 in Perfetto's padding: the holder's PID namespace, 1 + its index in the table; 0 unknown. */
    public static final int SPINLOCK_HOLDER_NAMESPACE_OFFSET = 2;
    /** u32 in Perfetto's padding: the pid of the process holding the lock, in its namespace; 0 if unknown. */
    public static final int SPINLOCK_HOLDER_PID_OFFSET = 4;
    public static final int READ_POS_OFFSET = 8;
    public static final int WRITE_POS_OFFSET = 16;
    public static final int CLIENT_SPINLOCK_BLOCKED_US_OFFSET = 24;
    public static final int FAILED_SPINLOCKS_OFFSET = 32;
    public static final int ERROR_STATE_OFFSET = 40;
    public static final int SHUTTING_DOWN_OFFSET = 48;
    public static final int READER_PAUSED_OFFSET = 56;

    /** Start of Perfetto's {@code SharedRingBuffer::Stats}, 10 u64s, plain (non-atomic). */
    public static final int STATS_OFFSET = 64;
    public static final int STATS_BYTES_WRITTEN_OFFSET = STATS_OFFSET;
    public static final int STATS_NUM_WRITES_SUCCEEDED_OFFSET = STATS_OFFSET + 8;
    public static final int STATS_NUM_WRITES_CORRUPT_OFFSET = STATS_OFFSET + 16;
    public static final int STATS_NUM_WRITES_OVERFLOW_OFFSET = STATS_OFFSET + 24;
    public static final int STATS_NUM_READS_SUCCEEDED_OFFSET = STATS_OFFSET + 32;
    public static final int STATS_NUM_READS_CORRUPT_OFFSET = STATS_OFFSET + 40;
    public static final int STATS_NUM_READS_NODATA_OFFSET = STATS_OFFSET + 48;
    /** Only in the copy GetStats returns; the shared bytes stay 0. */
    public static final int STATS_FAILED_SPINLOCKS_OFFSET = STATS_OFFSET + 56;
    /** Only in the copy GetStats returns; the shared bytes stay 0. */
    public static final int STATS_CLIENT_SPINLOCK_BLOCKED_US_OFFSET = STATS_OFFSET + 64;
    /** Only in the copy GetStats returns; the shared bytes stay 0. */
    public static final int STATS_ERROR_STATE_OFFSET = STATS_OFFSET + 72;
    public static final int STATS_SIZE = 80;

    /** {@code sizeof(MetadataPage)}. */
    public static final int METADATA_SIZE = STATS_OFFSET + STATS_SIZE;

    /** After Perfetto's metadata: the table of PID namespaces, u64 inode numbers, 0 for a free entry. */
    public static final int PID_NAMESPACES_OFFSET = METADATA_SIZE;
    public static final int PID_NAMESPACE_SLOTS = 32;

    /** Record header: the u32 length word, then 4 bytes nobody writes. */
    public static final int RECORD_LENGTH_OFFSET = 0;
    public static final int RECORD_HEADER_SIZE = 8;
    /** Records start at multiples of 8 and positions advance in multiples of 8. */
    public static final int RECORD_ALIGNMENT = 8;
    /** The length word holds 32 bits, so no payload can be longer. */
    public static final long MAX_RECORD_LENGTH = 0xFFFF_FFFFL;

    /** PROT_NONE bytes after the second copy of the ring, as Perfetto reserves them (64 MiB). */
    public static final long GUARD_SIZE = 64L * 1024 * 1024;

    private SharedRingBufferDescriptor() {
    }

    /** Bytes a record of {@code length} payload bytes occupies in the ring. */
    public static long stride(long length) {
        return (length + RECORD_HEADER_SIZE + RECORD_ALIGNMENT - 1) & ~(long) (RECORD_ALIGNMENT - 1);
    }
}
