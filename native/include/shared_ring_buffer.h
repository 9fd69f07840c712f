// A C implementation of heapprofd's SharedRingBuffer, written from the layout in
// SharedRingBufferDescriptor.java: the other side of shm-ring's cross-process tests.
// Same offsets, same memory orders (C11 atomics), same checks on the peer's data, and
// the same holder convention for the spinlock: the holder's pid in bytes 4..7 and its PID
// namespace's slot in bytes 2..3, both in one atomic step (see the Java class comment,
// "Dead lock holders"). The lock is taken as Perfetto takes it, by exchanging the locked
// byte, and the holder written right after; the Java side sets all three in one 8-byte
// compare-and-set, so the cross-process tests mix the two styles.
#ifndef FFMTRACE_SHARED_RING_BUFFER_H_
#define FFMTRACE_SHARED_RING_BUFFER_H_

#include <stddef.h>
#include <stdint.h>

enum {
  SRB_LOCKED_OFFSET = 0,
  SRB_POISONED_OFFSET = 1,
  SRB_HOLDER_NAMESPACE_OFFSET = 2,  // u16: 1 + the holder's index in the PID namespace table, 0 unknown
  SRB_HOLDER_PID_OFFSET = 4,
  SRB_READ_POS_OFFSET = 8,
  SRB_WRITE_POS_OFFSET = 16,
  SRB_BLOCKED_US_OFFSET = 24,
  SRB_FAILED_SPINLOCKS_OFFSET = 32,
  SRB_ERROR_STATE_OFFSET = 40,
  SRB_SHUTTING_DOWN_OFFSET = 48,
  SRB_READER_PAUSED_OFFSET = 56,
  SRB_STATS_BYTES_WRITTEN_OFFSET = 64,
  SRB_STATS_WRITES_SUCCEEDED_OFFSET = 72,
  SRB_STATS_WRITES_CORRUPT_OFFSET = 80,
  SRB_STATS_WRITES_OVERFLOW_OFFSET = 88,
  SRB_STATS_READS_SUCCEEDED_OFFSET = 96,
  SRB_STATS_READS_CORRUPT_OFFSET = 104,
  SRB_STATS_READS_NODATA_OFFSET = 112,
  SRB_METADATA_SIZE = 144,
  // After Perfetto's metadata, in bytes it leaves unused: u64 inode numbers of the PID
  // namespaces of the processes attached, each set once from 0, never changed.
  SRB_PID_NAMESPACES_OFFSET = 144,
  SRB_PID_NAMESPACE_SLOTS = 32,
  SRB_HEADER_SIZE = 8,
};

typedef enum {
  SRB_OK = 0,
  SRB_NO_SPACE = 1,
  SRB_TOO_BIG = 2,
  SRB_CORRUPT = 3,
  SRB_NO_DATA = 4,
  SRB_ZERO_LENGTH = 5,  // refused: a committed length of 0 would read as "not committed"
} srb_result;

typedef struct {
  int fd;
  uint8_t* meta;  // start of the reservation: metadata page, ring, ring again, guard
  uint8_t* ring;
  uint64_t size;  // ring size S
  size_t outer_size;
  int pid;  // set again by a forked child that takes the lock
  uint16_t ns_slot;  // our PID namespace's slot (1-based), 0 if it could not be recorded
  // 0 (attach and create set it): a holder found dead poisons the lock, as the Java side
  // does. 1: the waiter that finds it dead takes the lock over instead, for writers that
  // share a ring across processes and must outlive one another (ffmtrace's ring stress).
  int take_over_dead_holders;
  uint64_t takeovers;  // locks this process took from a dead holder
} srb;

typedef struct {
  uint8_t* header;
  uint8_t* data;
  uint64_t size;
  uint64_t stride;
  uint64_t bytes_free;  // srb_begin_write: the ring's free bytes once this record is reserved
} srb_record;

// Maps a buffer fd (taking ownership). 0 on success; -1 with a message in err.
int srb_attach(srb* b, int fd, int require_seals, char* err, size_t err_len);
// A sealed memfd of one page plus ring_size, mapped. 0 on success, -1 with err.
int srb_create(srb* b, uint64_t ring_size, char* err, size_t err_len);
void srb_close(srb* b);

// Try mode (blocking = 0) gives up after 1000 rounds of 1024 tries and a 1 ms sleep.
// Returns 1 when locked. Either mode poisons the lock and fails when its holder is found
// dead (a process of our PID namespace that no longer exists or is a zombie), or, with
// take_over_dead_holders set, takes it over with a compare-and-set of the dead holder's
// word and returns 1: a record the holder had reserved stays uncommitted (see
// ring_stress_writer.c for how a supervisor can account for it).
int srb_lock(srb* b, int blocking);
void srb_unlock(srb* b);
void srb_poison(srb* b);

srb_result srb_begin_write(srb* b, uint64_t size, srb_record* out);
void srb_end_write(srb* b, const srb_record* r);
srb_result srb_begin_read(srb* b, srb_record* out);
void srb_end_read(srb* b, const srb_record* r);

// Bytes written and not yet handed back by the reader (0 if the positions are corrupt).
uint64_t srb_unread_bytes(srb* b);

void srb_set_error_state(srb* b, uint64_t state);
void srb_set_shutting_down(srb* b);
// The reader, before it sleeps: sets reader_paused, then a full fence; it must then look
// for a record once more, and sleep only if there is none.
void srb_set_reader_paused(srb* b);
// A writer, after srb_end_write: a full fence, then whether the reader paused (it must be
// woken), resetting the flag so that one writer wakes it. With the reader's fence, either
// the reader sees the record or the writer sees the flag: no wake-up is lost.
int srb_get_and_reset_reader_paused(srb* b);

#endif  // FFMTRACE_SHARED_RING_BUFFER_H_
