// The C client's cost per allocation: run with the client preloaded
// (LD_PRELOAD=libffmtrace_heapprofd.so; scripts/heapprofd-bench-c does). This program is
// also the service's side: a thread serves the handshake on an abstract socket and keeps
// draining the ring, so the client never waits for room. The main thread then times
// mallocs of 64 bytes at the sampling interval given (huge: none sampled; 6400: 1 in 100;
// 1: every one, each with its stack copy; 0: no client, for the bare malloc), and prints
// ns per malloc, with, in the same process and rounds, glibc's __libc_malloc, which the
// hook calls, and the difference: what the hook adds. The frees are outside the timed
// loops, and bypass the client (__libc_free): it records every free, and the records'
// traffic through the caches would slow whichever round came next.
//
//   heapprofd_client_bench INTERVAL BATCH
#define _GNU_SOURCE
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "ffmtrace_util.h"
#include "heapprofd_wire.h"
#include "shared_ring_buffer.h"
#include "unix_peer.h"

enum { ALLOC_SIZE = 64 };

extern void* __libc_malloc(size_t size);
extern void __libc_free(void* ptr);

static srb g_ring;
static atomic_int g_done;
static int g_listener;
static uint64_t g_interval;

static void* serve(void* unused) {
  (void)unused;
  int client = accept(g_listener, NULL, NULL);
  if (client < 0) {
    peer_die("accept");
  }
  char byte;
  char control[CMSG_SPACE(2 * sizeof(int))];
  struct iovec iov = {&byte, 1};
  struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof(control)};
  if (recvmsg(client, &msg, MSG_CMSG_CLOEXEC) != 1) {
    peer_die("recvmsg");
  }
  for (struct cmsghdr* c = CMSG_FIRSTHDR(&msg); c != NULL; c = CMSG_NXTHDR(&msg, c)) {
    int fds[2];
    memcpy(fds, CMSG_DATA(c), sizeof(fds));
    close(fds[0]);
    close(fds[1]);
  }
  hpd_client_configuration config;
  memset(&config, 0, sizeof(config));
  config.num_heaps = 1;
  strcpy(config.heaps[0].name, "libc.malloc");
  config.heaps[0].interval = g_interval;
  config.block_client = 1;
  struct iovec data = {&config, sizeof(config)};
  char fd_control[CMSG_SPACE(sizeof(int))];
  memset(fd_control, 0, sizeof(fd_control));
  struct msghdr out = {.msg_iov = &data, .msg_iovlen = 1, .msg_control = fd_control, .msg_controllen = sizeof(fd_control)};
  struct cmsghdr* cmsg = CMSG_FIRSTHDR(&out);
  cmsg->cmsg_level = SOL_SOCKET;
  cmsg->cmsg_type = SCM_RIGHTS;
  cmsg->cmsg_len = CMSG_LEN(sizeof(int));
  memcpy(CMSG_DATA(cmsg), &g_ring.fd, sizeof(int));
  if (sendmsg(client, &out, MSG_NOSIGNAL) != (ssize_t)sizeof(config)) {
    peer_die("sendmsg");
  }
  char wake[4096];
  srb_record record;
  while (!atomic_load(&g_done)) {
    if (recv(client, wake, sizeof(wake), MSG_DONTWAIT) == 0) {
      break;
    }
    while (srb_begin_read(&g_ring, &record) == SRB_OK) {
      srb_end_read(&g_ring, &record);
    }
  }
  close(client);
  return NULL;
}

// Waits until the service thread has read every record: the samples just recorded must
// not still be draining while the next round is timed.
static void wait_until_drained(void) {
  const uint64_t* read_pos = (const uint64_t*)(g_ring.meta + SRB_READ_POS_OFFSET);
  const uint64_t* write_pos = (const uint64_t*)(g_ring.meta + SRB_WRITE_POS_OFFSET);
  while (__atomic_load_n(read_pos, __ATOMIC_ACQUIRE) != __atomic_load_n(write_pos, __ATOMIC_ACQUIRE)) {
    sched_yield();
  }
}

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

// ns per malloc of `batch` mallocs, through the hook or straight to glibc's; then frees
// them, untimed.
static double time_mallocs(void** blocks, long batch, int hooked) {
  double start = now_ns();
  if (hooked) {
    for (long i = 0; i < batch; i++) {
      blocks[i] = malloc(ALLOC_SIZE);
    }
  } else {
    for (long i = 0; i < batch; i++) {
      blocks[i] = __libc_malloc(ALLOC_SIZE);
    }
  }
  double elapsed = now_ns() - start;
  for (long i = 0; i < batch; i++) {
    __libc_free(blocks[i]);
  }
  wait_until_drained();
  return elapsed / (double)batch;
}

// One client per process (its state is global): this run's interval is argv's.
int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s INTERVAL BATCH (run with libffmtrace_heapprofd.so preloaded)\n", argv[0]);
    return 2;
  }
  g_interval = arg_u64(argv[0], "interval", argv[1], UINT64_MAX);
  long batch = (long)arg_u64(argv[0], "batch", argv[2], LONG_MAX / sizeof(void*));
  void** blocks = calloc((size_t)batch, sizeof(void*));
  char err[256];
  if (srb_create(&g_ring, 8 << 20, err, sizeof(err)) != 0) {
    fprintf(stderr, "srb_create: %s\n", err);
    return 2;
  }
  char name[64];
  snprintf(name, sizeof(name), "@ffmtrace-heapprofd-bench-%d", getpid());
  g_listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_un addr;
  memset(&addr, 0, sizeof(addr));
  addr.sun_family = AF_UNIX;
  memcpy(addr.sun_path + 1, name + 1, strlen(name) - 1);
  socklen_t size = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(name));
  if (bind(g_listener, (struct sockaddr*)&addr, size) != 0 || listen(g_listener, 1) != 0) {
    peer_die("bind");
  }
  pthread_t server;
  pthread_create(&server, NULL, serve, NULL);
  setenv("FFMTRACE_HEAPPROFD_SOCKET", name, 1);
  if (g_interval > 0) {
    kill(getpid(), SIGRTMIN + 4);  // heapprofd's signal: the next allocation connects
  }
  __libc_free(malloc(1));
  // Each round times two loops of each kind, in the order ABBA, BAAB on alternate rounds,
  // so that both kinds see the same heap, the same drift of the machine's speed and each
  // place in the round as often.
  for (int round = 0; round < 8; round++) {
    double ns[2] = {0, 0};
    for (int k = 0; k < 4; k++) {
      int hooked = (k == 1 || k == 2) ^ (round & 1);
      ns[hooked] += time_mallocs(blocks, batch, hooked) / 2;
    }
    printf("interval %llu: %.1f ns per malloc, %.1f bare, hook %+.1f\n", (unsigned long long)g_interval, ns[1], ns[0],
           ns[1] - ns[0]);
  }
  // The service thread may still wait in accept (no client preloaded): exit ends it.
  atomic_store(&g_done, 1);
  return 0;
}
