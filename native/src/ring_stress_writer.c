// A writer process of the SharedRingBuffer stress (dev.ffmtrace.cli.stress.RingStress):
// numbered, checksummed records into a ring that other writer processes share, while the
// JVM reads them and kills writers with SIGKILL.
//
//   ring_stress_writer --ring PATH --writer-id N --ledger PATH [--seed S] [--rate R]
//       [--records K] [--seconds T] [--max-payload B] [--hold-lock-us U] [--hold-every E]
//
// PATH of the ring is the JVM's memfd as /proc/<pid>/fd/<fd>: opening it gives this
// process the same sealed file, with no socket to pass it over. Dead lock holders are
// taken over (srb.take_over_dead_holders), so a writer killed holding the lock stops
// nobody. R records per second (0: as fast as it can), K records (0: until --seconds
// pass, or until killed); every E-th record (default 8) sleeps U µs inside the lock, so
// that a kill often lands there.
//
// Record (little-endian): u32 writer id, u32 kind (0; 1 is the tombstone the JVM commits
// for a killed writer's reserved record), u64 sequence number, u64 records dropped just
// before this one (since the last one written), 8 or more random bytes, u32 FNV-1a 32 of
// all before it. Every record attempted takes a sequence number; one that finds no room
// (or no lock) is dropped and announced by the next one written.
//
// The ledger, 56 bytes in /dev/shm, outlives a SIGKILL:
//   0  u64  attempted | dropped << 32, stored (release) after every record
//   8  u64  1 while this process holds the lock; 2 once it stays there to be killed
//  16  u64  1 + the ring position of the record being reserved, 0 when none
//  24  u64  its length
//  32  u64  the drops it announces
//  40  u64  set by the JVM: take the lock once more and stay in it until killed, so that a
//           kill inside the lock is certain rather than a matter of timing
//  48  u64  set by the JVM: end now, as at the end of --seconds (the phase ends when the
//           JVM has made its kills, not at a time the writer was given)
// The position is stored under the lock before the reservation, and 4 bytes of the
// record's header that the ring leaves unused (bytes 4..7) are set to 0x80000000 | id in
// the free space there first; so after a kill the JVM can tell its reserved, uncommitted
// record (header length 0, tag ours, write position past it) from a position another
// writer reserved after taking the lock over, and commit a tombstone in its place.
//
// On a clean end it prints "R <attempted> <written> <dropped>" and "S <takeovers>
// <lock failures>" and exits 0; 2 for a bad command line, ring or ledger.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "ffmtrace_util.h"
#include "shared_ring_buffer.h"

#define FIXED_FIELDS 24
#define MIN_RANDOM 8
#define TAG_BIT 0x80000000u
#define PROGRAM "ring_stress_writer"

enum { L_COUNTS, L_IN_LOCK, L_POS, L_LEN, L_DROPS, L_STAY, L_STOP, L_WORDS };

typedef struct {
  const char* ring;
  const char* ledger;
  uint32_t id;
  uint64_t seed;
  double rate;
  uint64_t records;
  double seconds;
  uint64_t max_payload;
  uint64_t hold_us;
  uint64_t hold_every;
} options;

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void put32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static int parse(int argc, char** argv, options* o) {
  *o = (options){.max_payload = 4096, .hold_every = 8, .id = UINT32_MAX};
  for (int i = 1; i + 1 < argc; i += 2) {
    const char* f = argv[i];
    const char* v = argv[i + 1];
    if (strcmp(f, "--ring") == 0) o->ring = v;
    else if (strcmp(f, "--ledger") == 0) o->ledger = v;
    else if (strcmp(f, "--writer-id") == 0) o->id = (uint32_t)arg_u64(PROGRAM, f, v, TAG_BIT - 1);
    else if (strcmp(f, "--seed") == 0) o->seed = arg_u64(PROGRAM, f, v, UINT64_MAX);
    else if (strcmp(f, "--rate") == 0) o->rate = arg_nonnegative(PROGRAM, f, v);
    else if (strcmp(f, "--records") == 0) o->records = arg_u64(PROGRAM, f, v, UINT64_MAX);
    else if (strcmp(f, "--seconds") == 0) o->seconds = arg_nonnegative(PROGRAM, f, v);
    else if (strcmp(f, "--max-payload") == 0) o->max_payload = arg_u64(PROGRAM, f, v, UINT32_MAX);
    else if (strcmp(f, "--hold-lock-us") == 0) o->hold_us = arg_u64(PROGRAM, f, v, UINT32_MAX);
    else if (strcmp(f, "--hold-every") == 0) o->hold_every = arg_u64(PROGRAM, f, v, UINT64_MAX);
    else return 0;
  }
  return argc % 2 == 1 && o->ring && o->ledger && o->id < TAG_BIT && o->hold_every > 0 &&
         o->max_payload >= FIXED_FIELDS + MIN_RANDOM + 4;
}

static _Atomic uint64_t* map_ledger(const char* path) {
  int fd = open(path, O_RDWR | O_CLOEXEC);
  if (fd < 0) return NULL;
  void* p = mmap(NULL, L_WORDS * 8, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  return p == MAP_FAILED ? NULL : p;
}

static void ledger_put(_Atomic uint64_t* ledger, int word, uint64_t value) {
  atomic_store_explicit(&ledger[word], value, memory_order_release);
}

int main(int argc, char** argv) {
  options o;
  if (!parse(argc, argv, &o)) {
    fprintf(stderr,
            "usage: ring_stress_writer --ring PATH --writer-id N --ledger PATH [--seed S] [--rate R]\n"
            "    [--records K] [--seconds T] [--max-payload B] [--hold-lock-us U] [--hold-every E]\n");
    return 2;
  }
  _Atomic uint64_t* ledger = map_ledger(o.ledger);
  if (ledger == NULL) {
    fprintf(stderr, "ring_stress_writer: %s is no ledger: %s\n", o.ledger, strerror(errno));
    return 2;
  }
  srb b;
  char err[256];
  int fd = open(o.ring, O_RDWR | O_CLOEXEC);
  if (fd < 0 || srb_attach(&b, fd, 1, err, sizeof(err)) != 0) {
    fprintf(stderr, "ring_stress_writer: %s: %s\n", o.ring, fd < 0 ? strerror(errno) : err);
    return 2;
  }
  b.take_over_dead_holders = 1;
  _Atomic uint64_t* write_pos = (_Atomic uint64_t*)(b.meta + SRB_WRITE_POS_OFFSET);
  _Atomic uint64_t* read_pos = (_Atomic uint64_t*)(b.meta + SRB_READ_POS_OFFSET);

  uint8_t* record = malloc(o.max_payload);
  uint64_t state = o.seed ^ ((uint64_t)o.id << 32);
  uint64_t attempted = 0, written = 0, dropped = 0, pending = 0, lock_failures = 0;
  double start = now_seconds();
  while ((o.records == 0 || attempted < o.records) && (o.seconds <= 0 || now_seconds() - start < o.seconds) &&
         atomic_load_explicit(&ledger[L_STOP], memory_order_acquire) == 0) {
    uint64_t len = FIXED_FIELDS + MIN_RANDOM + 4 + splitmix64(&state) % (o.max_payload - FIXED_FIELDS - MIN_RANDOM - 3);
    put32(record, o.id);
    put32(record + 4, 0);
    put64(record + 8, attempted);
    put64(record + 16, pending);
    for (uint64_t i = FIXED_FIELDS; i < len - 4; i += 8) {
      uint64_t r = splitmix64(&state);
      memcpy(record + i, &r, len - 4 - i < 8 ? len - 4 - i : 8);
    }
    put32(record + len - 4, fnv1a32(FNV1A32_OFFSET, record, len - 4));

    srb_result result = SRB_NO_SPACE;
    srb_record r;
    if (srb_lock(&b, 0)) {
      ledger_put(ledger, L_IN_LOCK, 1);
      if (atomic_load_explicit(&ledger[L_STAY], memory_order_acquire) != 0) {
        ledger_put(ledger, L_IN_LOCK, 2);
        for (;;) pause();
      }
      if (o.hold_us && attempted % o.hold_every == 0) usleep((useconds_t)o.hold_us);
      uint64_t wr = atomic_load_explicit(write_pos, memory_order_acquire);
      uint64_t rd = atomic_load_explicit(read_pos, memory_order_acquire);
      uint64_t stride = (len + SRB_HEADER_SIZE + 7) & ~(uint64_t)7;
      // Only into free space: bytes not yet handed back may still be the reader's.
      if (wr >= rd && wr - rd <= b.size && wr % 8 == 0 && stride <= b.size - (wr - rd)) {
        atomic_store_explicit((_Atomic uint32_t*)(b.ring + (wr & (b.size - 1)) + 4), TAG_BIT | o.id,
                              memory_order_relaxed);
        ledger_put(ledger, L_LEN, len);
        ledger_put(ledger, L_DROPS, pending);
        ledger_put(ledger, L_POS, wr + 1);
      }
      result = srb_begin_write(&b, len, &r);
      ledger_put(ledger, L_IN_LOCK, 0);
      srb_unlock(&b);
    } else {
      lock_failures++;
    }
    if (result == SRB_OK) {
      memcpy(r.data, record, len);
      srb_end_write(&b, &r);
      written++;
      pending = 0;
    } else {
      dropped++;
      pending++;
    }
    ledger_put(ledger, L_POS, 0);
    attempted++;
    ledger_put(ledger, L_COUNTS, attempted | dropped << 32);
    if (o.rate > 0) {
      double due = start + (double)attempted / o.rate;
      double wait = due - now_seconds();
      if (wait > 0) usleep((useconds_t)(wait * 1e6));
    }
  }
  printf("R %llu %llu %llu\n", (unsigned long long)attempted, (unsigned long long)written,
         (unsigned long long)dropped);
  printf("S %llu %llu\n", (unsigned long long)b.takeovers, (unsigned long long)lock_failures);
  free(record);
  srb_close(&b);
  return 0;
}
