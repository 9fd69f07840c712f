// The C process of shm-ring's cross-process tests, using shared_ring_buffer.c.
//
//   ring_peer <socket> attach <action> [args]    receive the buffer fd, attach (seals required)
//   ring_peer <socket> create:<ring size> <action> [args]
//                                                create a sealed buffer and send its fd
// actions:
//   write-all      records n = 0 .. S-9, record n has length n+1 and byte i = i*131 + n*17 + len
//   read-all       read those records and check every byte
//   stress-write <seconds> <writer id> <seed> <max length>
//                  random lengths >= 12: u32 seq, u32 writer id, random bytes, u32 FNV-1a
//                  of everything before it; prints "wrote <count>"
//   hold-and-die   take the spinlock and exit holding it
//   hold-until-told
//                  take the spinlock, print "holding <pid>", release it when a byte (or EOF)
//                  arrives on the socket, print "released"
//   zombie-holder  fork a child that takes the spinlock, SIGKILL it and leave it unreaped
//                  (a zombie, which kill(pid, 0) still finds); print "zombie <pid>", reap it
//                  when a byte (or EOF) arrives on the socket, print "reaped"
//   lock try|blocking [take-over]
//                  take the spinlock in that mode and release it; print "locked", "poisoned"
//                  or "failed" (held throughout a try), then the milliseconds it took; with
//                  take-over, a dead holder's lock is taken over, and "took-over" printed
//                  instead of "locked"
//   golden         the operation sequence of SharedRingBufferGoldenTest, then send "G"
// <socket> is a path or @name (abstract). Exit 0 on success, 1 on a check failure.
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ffmtrace_util.h"
#include "unix_peer.h"

#include "shared_ring_buffer.h"

#define DEADLINE_SECONDS 60

static void fail(const char* message, uint64_t a, uint64_t b) {
  fprintf(stderr, "ring_peer: %s (%llu, %llu)\n", message, (unsigned long long)a, (unsigned long long)b);
  exit(1);
}

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint8_t pattern(uint64_t n, uint64_t len, uint64_t i) { return (uint8_t)(i * 131 + n * 17 + len); }

// Reserves under the lock, fills without it, commits; yields while the ring is full.
static srb_record write_record(srb* b, uint64_t len, double deadline) {
  srb_record r;
  for (;;) {
    if (now_seconds() > deadline) fail("timed out writing a record", len, 0);
    if (!srb_lock(b, 0)) fail("spinlock not acquired", len, 0);
    srb_result result = srb_begin_write(b, len, &r);
    srb_unlock(b);
    if (result == SRB_OK) return r;
    if (result != SRB_NO_SPACE) fail("begin_write failed", len, (uint64_t)result);
    sched_yield();
  }
}

static srb_record read_record(srb* b, double deadline) {
  srb_record r;
  for (;;) {
    if (now_seconds() > deadline) fail("timed out reading a record", 0, 0);
    srb_result result = srb_begin_read(b, &r);
    if (result == SRB_OK) return r;
    if (result != SRB_NO_DATA) fail("begin_read failed", (uint64_t)result, 0);
    sched_yield();
  }
}

static void write_all(srb* b) {
  double deadline = now_seconds() + DEADLINE_SECONDS;
  uint64_t count = b->size - SRB_HEADER_SIZE;
  for (uint64_t n = 0; n < count; n++) {
    uint64_t len = n + 1;
    srb_record r = write_record(b, len, deadline);
    for (uint64_t i = 0; i < len; i++) r.data[i] = pattern(n, len, i);
    srb_end_write(b, &r);
  }
  printf("wrote %llu\n", (unsigned long long)count);
}

static void read_all(srb* b) {
  double deadline = now_seconds() + DEADLINE_SECONDS;
  uint64_t count = b->size - SRB_HEADER_SIZE;
  for (uint64_t n = 0; n < count; n++) {
    srb_record r = read_record(b, deadline);
    if (r.size != n + 1) fail("record has the wrong length", n, r.size);
    for (uint64_t i = 0; i < r.size; i++) {
      if (r.data[i] != pattern(n, r.size, i)) fail("record has a wrong byte", n, i);
    }
    srb_end_read(b, &r);
  }
  printf("read %llu\n", (unsigned long long)count);
}

static uint64_t xorshift(uint64_t* s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static void stress_write(srb* b, double seconds, uint32_t id, uint64_t seed, uint64_t max_len) {
  double start = now_seconds();
  double deadline = start + seconds + DEADLINE_SECONDS;
  uint64_t state = seed | 1;
  uint32_t seq = 0;
  // One record at least, however late this process starts.
  do {
    uint64_t len = 12 + xorshift(&state) % (max_len - 11);
    srb_record r = write_record(b, len, deadline);
    memcpy(r.data, &seq, 4);
    memcpy(r.data + 4, &id, 4);
    for (uint64_t i = 8; i < len - 4; i++) r.data[i] = (uint8_t)xorshift(&state);
    uint32_t sum = fnv1a32(FNV1A32_OFFSET, r.data, len - 4);
    memcpy(r.data + len - 4, &sum, 4);
    srb_end_write(b, &r);
    seq++;
  } while (now_seconds() - start < seconds);
  printf("wrote %u\n", seq);
}

// Blocks until the test sends a byte or closes the connection.
static void await_word(int sock) {
  char c;
  while (recv(sock, &c, 1, 0) < 0 && errno == EINTR) {
  }
}

static void hold_until_told(srb* b, int sock) {
  if (!srb_lock(b, 1)) fail("spinlock not acquired", 0, 0);
  printf("holding %d\n", b->pid);
  fflush(stdout);
  await_word(sock);
  srb_unlock(b);
  printf("released\n");
}

// A holder that died but whose parent does not reap it: the JVM reaps its own children at
// once, so the tests need this process as the parent that does not.
static void zombie_holder(srb* b, int sock) {
  int ready[2];
  if (pipe(ready) != 0) peer_die("pipe");
  pid_t parent = getpid();
  pid_t child = fork();
  if (child < 0) peer_die("fork");
  if (child == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive a helper that failed
    if (getppid() != parent) _exit(5);
    b->pid = (int)getpid();
    if (!srb_lock(b, 0)) _exit(3);
    if (write(ready[1], "L", 1) != 1) _exit(4);
    for (;;) pause();
  }
  char c;
  if (read(ready[0], &c, 1) != 1) fail("the child did not take the spinlock", (uint64_t)child, 0);
  if (kill(child, SIGKILL) != 0) peer_die("kill");
  siginfo_t info;
  memset(&info, 0, sizeof(info));
  // WNOWAIT: wait until it is a zombie, and leave it one.
  if (waitid(P_PID, (id_t)child, &info, WEXITED | WNOWAIT) != 0) peer_die("waitid");
  printf("zombie %d\n", (int)child);
  fflush(stdout);
  await_word(sock);
  if (waitpid(child, NULL, 0) != child) peer_die("waitpid");
  printf("reaped\n");
}

static void lock_and_report(srb* b, const char* mode, int take_over) {
  b->take_over_dead_holders = take_over;
  double start = now_seconds();
  int locked = srb_lock(b, strcmp(mode, "blocking") == 0);
  long ms = (long)((now_seconds() - start) * 1000);
  if (locked) srb_unlock(b);
  int poisoned = atomic_load((_Atomic uint8_t*)(b->meta + SRB_POISONED_OFFSET)) != 0;
  const char* verdict = locked ? (b->takeovers ? "took-over" : "locked") : poisoned ? "poisoned" : "failed";
  printf("%s %ld\n", verdict, ms);
}

// Keep in step with SharedRingBufferGoldenTest.runSequence.
static void golden(srb* b, int sock) {
  srb_record r;
  uint64_t lens[2] = {5, 100};
  for (int k = 0; k < 2; k++) {
    if (!srb_lock(b, 0)) fail("golden: lock", (uint64_t)k, 0);
    if (srb_begin_write(b, lens[k], &r) != SRB_OK) fail("golden: write", (uint64_t)k, 0);
    srb_unlock(b);
    for (uint64_t i = 0; i < lens[k]; i++) r.data[i] = pattern((uint64_t)k, lens[k], i);
    srb_end_write(b, &r);
  }
  if (srb_begin_read(b, &r) != SRB_OK || r.size != 5) fail("golden: read 1", r.size, 0);
  srb_end_read(b, &r);
  if (!srb_lock(b, 0)) fail("golden: lock 3", 0, 0);
  if (srb_begin_write(b, b->size - 7, &r) != SRB_TOO_BIG) fail("golden: too big", 0, 0);
  if (srb_begin_write(b, 4000, &r) != SRB_NO_SPACE) fail("golden: no space", 0, 0);
  srb_unlock(b);
  if (srb_begin_read(b, &r) != SRB_OK || r.size != 100) fail("golden: read 2", r.size, 0);
  srb_end_read(b, &r);
  if (srb_begin_read(b, &r) != SRB_NO_DATA) fail("golden: no data", 0, 0);
  _Atomic uint64_t* wr = (_Atomic uint64_t*)(b->meta + SRB_WRITE_POS_OFFSET);
  uint64_t saved = atomic_load(wr);
  atomic_store(wr, saved + 1);
  if (!srb_lock(b, 0)) fail("golden: lock 4", 0, 0);
  if (srb_begin_write(b, 1, &r) != SRB_CORRUPT) fail("golden: write corrupt", 0, 0);
  srb_unlock(b);
  if (srb_begin_read(b, &r) != SRB_CORRUPT) fail("golden: read corrupt", 0, 0);
  atomic_store(wr, saved);
  srb_set_error_state(b, 1);
  srb_set_shutting_down(b);
  srb_set_reader_paused(b);
  srb_poison(b);
  if (srb_lock(b, 0)) fail("golden: poisoned lock taken", 0, 0);
  if (send(sock, "G", 1, MSG_NOSIGNAL) != 1) peer_die("send");
}

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: ring_peer <socket> attach|create:<size> <action> [args]\n");
    return 2;
  }
  int sock = peer_connect(argv[1]);
  srb b;
  char err[256];
  if (strcmp(argv[2], "attach") == 0) {
    if (srb_attach(&b, peer_receive_fd(sock), 1, err, sizeof(err)) != 0) {
      fprintf(stderr, "ring_peer: %s\n", err);
      return 2;
    }
  } else if (strncmp(argv[2], "create:", 7) == 0) {
    if (srb_create(&b, arg_u64("ring_peer", "ring size", argv[2] + 7, UINT64_MAX), err, sizeof(err)) != 0) {
      fprintf(stderr, "ring_peer: %s\n", err);
      return 2;
    }
    peer_send_fd(sock, b.fd, 'S');
  } else {
    fprintf(stderr, "ring_peer: unknown role %s\n", argv[2]);
    return 2;
  }

  const char* action = argv[3];
  if (strcmp(action, "write-all") == 0) {
    write_all(&b);
  } else if (strcmp(action, "read-all") == 0) {
    read_all(&b);
  } else if (strcmp(action, "stress-write") == 0 && argc == 8) {
    stress_write(&b, arg_nonnegative("ring_peer", "seconds", argv[4]),
                 (uint32_t)arg_u64("ring_peer", "writer id", argv[5], UINT32_MAX),
                 arg_u64("ring_peer", "seed", argv[6], UINT64_MAX), arg_u64("ring_peer", "max length", argv[7], UINT64_MAX));
  } else if (strcmp(action, "hold-and-die") == 0) {
    if (!srb_lock(&b, 0)) fail("spinlock not acquired", 0, 0);
    printf("holding\n");
    fflush(stdout);
    _exit(0);
  } else if (strcmp(action, "hold-until-told") == 0) {
    hold_until_told(&b, sock);
  } else if (strcmp(action, "zombie-holder") == 0) {
    zombie_holder(&b, sock);
  } else if (strcmp(action, "lock") == 0 && (argc == 5 || (argc == 6 && strcmp(argv[5], "take-over") == 0)) &&
             (strcmp(argv[4], "try") == 0 || strcmp(argv[4], "blocking") == 0)) {
    lock_and_report(&b, argv[4], argc == 6);
  } else if (strcmp(action, "golden") == 0) {
    golden(&b, sock);
  } else {
    fprintf(stderr, "ring_peer: unknown action %s\n", action);
    return 2;
  }
  fflush(stdout);
  srb_close(&b);
  close(sock);
  return 0;
}
