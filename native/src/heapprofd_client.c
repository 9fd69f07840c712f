// ffmtrace's heapprofd client for native programs: a library to preload (LD_PRELOAD) that
// wraps malloc, free, calloc, realloc, posix_memalign, aligned_alloc and memalign and
// speaks heapprofd's protocol (native/include/heapprofd_wire.h): the handshake on the
// service's socket, then each sampled allocation as a Malloc record carrying the raw
// stack (from the stack pointer towards the stack's end, bounded) and the registers, each
// free as a Free record, with a wake-up byte when the service's reader sleeps.
//
// THE RULE. A hook runs inside whatever called malloc or free, which may hold any lock
// of libc's or the program's: glibc's pthread_getattr_np callocs under the thread's own
// lock, dlopen allocates under the loader's, stdio under a FILE's. So from inside a hook
// the client calls nothing that may take a lock or allocate: only system calls that
// lock nothing in user space, the vDSO's clocks, pure functions, atomics, and its own
// spinlock and the ring's (which nothing outside the client takes). A lock its caller
// may hold would deadlock the thread on itself (issue 33: HotSpot's stack-bounds lookup
// under the preloaded client hung `java -version`); an allocation would re-enter the
// hooks. What the hook path calls, and why each is safe:
//   - __libc_malloc and friends: the real allocator, called before the hook's own work,
//     never inside it.
//   - socket, connect, sendmsg, recvmsg, send, recv, open, read, close, fstat, fcntl,
//     mmap, munmap, stat, getpid, kill, poll, nanosleep, usleep, sigaltstack and
//     syscall(pidfd_open): system calls, no user-space lock, no allocation.
//   - clock_gettime, time: the vDSO. getenv, strlen, strncmp, memcpy, memset, log,
//     sysconf(_SC_PAGESIZE): pure, or reads of what was set at start.
//   - pthread_setcancelstate: an atomic on the thread's own word. Cancellation is off
//     while in the client, since several of the calls above are cancellation points and
//     a thread unwound out of a hook would leave the client's lock held for ever.
//   - snprintf into the caller's buffer with %d, %zu, %s (the ring's attach errors; a
//     string stream has no lock and these conversions allocate nothing) and
//     strerrorname_np (a table; strerror would translate under gettext's lock).
// Nothing on the path is bound lazily (the library is linked -z now): the first call of
// a symbol would otherwise go through the dynamic linker's resolver. What needs a lock or
// memory happens outside any hook (heapprofd_client_stack.c: the threads' stack bounds).
// A thread-local flag, set while a thread is in the client, keeps the client from
// re-entering itself: from what it calls outside hooks, and from a signal handler that
// allocates or frees on a thread in a hook (unsampled and unrecorded then, rather than
// deadlocked on the client's lock).
//
// It starts at load when FFMTRACE_HEAPPROFD_SOCKET names the service's socket (a path,
// or @name for the abstract namespace), or later when the process gets heapprofd's
// real-time signal (SIGRTMIN + 4): the handler only asks, and the next allocation
// connects.
//
// Each thread samples its own allocations (Perfetto's client keeps one sampler, under its
// spinlock): it keeps the bytes to its next sample, drawn from its own random sequence, so
// the samples of all threads together are Poisson sampling of the process's bytes at the
// configured interval. An allocation that does not reach the next sample costs the hook
// a compare, a subtraction and a compare on that thread-local state, and a relaxed load
// of an epoch that changes only when the client's state does (asked to start, started,
// stopped): no lock, no atomic write, no call besides the allocator's. The
// rest (a sample, a new thread, a changed epoch, an allocation at least the interval)
// takes the slow path out of line, which also keeps errno as the allocator left it. Every
// free is recorded, as Perfetto's client does; without a service a free costs a relaxed
// load.
//
// The real allocator is glibc's __libc_* entry points, so looking it up never allocates.
// A forked child stops profiling: its parent's connection is not its own.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "ffmtrace_util.h"
#include "heapprofd_client_stack.h"
#include "heapprofd_wire.h"
#include "shared_ring_buffer.h"

extern void* __libc_malloc(size_t size);
extern void __libc_free(void* ptr);
extern void* __libc_calloc(size_t count, size_t size);
extern void* __libc_realloc(void* ptr, size_t size);
extern void* __libc_memalign(size_t alignment, size_t size);

enum { STATE_OFF = 0, STATE_ACTIVE = 1, STATE_STOPPED = 2 };
enum { MAX_STACK_COPY = 64 * 1024, HEAP_ID = 1, PROFILER_SIGNAL_OFFSET = 4, LOCK_SPINS = 100 };

// What every hook reads, on a cache line of its own: the writes of the sampled path (the
// lock, the sequence number) never take it away from the other cores. The interval is set
// before the state turns active, and read only after it has.
static struct {
  _Alignas(64) atomic_uint epoch;
  atomic_int state;
  atomic_int start_requested;
  uint64_t interval;
} g_shared = {.epoch = 1, .state = STATE_OFF};
// The client's lock, a spinlock as Perfetto's client has: held for one record's write.
static atomic_flag g_lock = ATOMIC_FLAG_INIT;
static int g_socket = -1;
static srb g_ring;
static hpd_client_configuration g_config;
static uint64_t g_sequence_number;
static uint64_t g_seed;
static atomic_uint_fast64_t g_threads_seeded;

// A thread's sampler and the client's other per-thread state. initial-exec: the
// preloaded library's thread-locals at a fixed offset from the thread pointer, with no
// __tls_get_addr call on every malloc. A new thread's zeros (epoch 0, limit 0) send its
// first allocation to the slow path, which sets the sampler up.
static __thread struct {
  int64_t bytes_to_next_sample;
  // The size from which an allocation takes the slow path: the interval while sampling
  // (always sampled, with its size), otherwise never.
  uint64_t limit;
  // 0 when the thread does not sample.
  uint64_t interval;
  uint64_t random;
  unsigned epoch;
  int in_client;
} t_client __attribute__((tls_model("initial-exec")));

// The state and the epoch that tells the hooks to look at it again.
static void set_state(int state) {
  atomic_store_explicit(&g_shared.state, state, memory_order_release);
  atomic_fetch_add_explicit(&g_shared.epoch, 1, memory_order_release);
}

// Perfetto's sampler, per thread: exponential gaps between samples with the interval for
// mean (plus one byte), an allocation at least the interval always sampled with its size,
// otherwise the interval per sample crossed.
static int64_t next_sample_interval(void) {
  uint64_t x = t_client.random;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  t_client.random = x;
  double u = (double)(x >> 11) / (double)(1ULL << 53);
  return (int64_t)(-log(1.0 - u) * (double)t_client.interval) + 1;
}

static uint64_t sample_size(size_t size) {
  if (size >= t_client.interval) {
    return size;
  }
  t_client.bytes_to_next_sample -= (int64_t)size;
  uint64_t samples = 0;
  while (t_client.bytes_to_next_sample <= 0) {
    t_client.bytes_to_next_sample += next_sample_interval();
    samples++;
  }
  return samples * t_client.interval;
}

static int connect_to(const char* name) {
  int sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (sock < 0) {
    return -1;
  }
  struct sockaddr_un addr;
  memset(&addr, 0, sizeof(addr));
  addr.sun_family = AF_UNIX;
  size_t length = strlen(name);
  if (length == 0 || length >= sizeof(addr.sun_path)) {
    close(sock);
    return -1;
  }
  memcpy(addr.sun_path, name, length);
  if (name[0] == '@') {
    addr.sun_path[0] = '\0';
  }
  socklen_t size = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + length + (name[0] == '@' ? 0 : 1));
  if (connect(sock, (struct sockaddr*)&addr, size) != 0) {
    close(sock);
    return -1;
  }
  return sock;
}

static int send_proc_fds(int sock) {
  int fds[2] = {open("/proc/self/maps", O_RDONLY | O_CLOEXEC), open("/proc/self/mem", O_RDONLY | O_CLOEXEC)};
  int ok = fds[0] >= 0 && fds[1] >= 0;
  if (ok) {
    char byte = 0;
    struct iovec iov = {&byte, 1};
    char control[CMSG_SPACE(sizeof(fds))];
    memset(control, 0, sizeof(control));
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof(control)};
    struct cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(sizeof(fds));
    memcpy(CMSG_DATA(cmsg), fds, sizeof(fds));
    ok = sendmsg(sock, &msg, MSG_NOSIGNAL) == 1;
  }
  for (int i = 0; i < 2; i++) {
    if (fds[i] >= 0) {
      close(fds[i]);
    }
  }
  return ok;
}

// The configuration in as many reads as it takes; returns the ring's fd or -1.
static int receive_configuration(int sock) {
  int ring_fd = -1;
  size_t have = 0;
  uint8_t* into = (uint8_t*)&g_config;
  while (have < sizeof(g_config)) {
    struct iovec iov = {into + have, sizeof(g_config) - have};
    char control[CMSG_SPACE(sizeof(int))];
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof(control)};
    ssize_t n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
    if (n <= 0) {
      break;
    }
    for (struct cmsghdr* c = CMSG_FIRSTHDR(&msg); c != NULL; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS && c->cmsg_len >= CMSG_LEN(sizeof(int))) {
        int fd;
        memcpy(&fd, CMSG_DATA(c), sizeof(fd));
        if (ring_fd < 0) {
          ring_fd = fd;
        } else {
          close(fd);
        }
      }
    }
    have += (size_t)n;
  }
  if (have < sizeof(g_config) && ring_fd >= 0) {
    close(ring_fd);
    ring_fd = -1;
  }
  return ring_fd;
}

// The interval heapprofd gives "libc.malloc", as its client looks it up.
static uint64_t malloc_interval(void) {
  for (uint64_t i = 0; i < g_config.num_heaps && i < HPD_MAX_HEAPS; i++) {
    if (strncmp(g_config.heaps[i].name, "libc.malloc", HPD_HEAP_NAME_SIZE) == 0) {
      return g_config.heaps[i].interval;
    }
  }
  return g_config.all_heaps ? g_config.default_interval : 0;
}

// Called with g_lock held and t_client.in_client set.
static void start(void) {
  const char* name = getenv("FFMTRACE_HEAPPROFD_SOCKET");
  int sock = name == NULL ? -1 : connect_to(name);
  int ring_fd = sock < 0 || !send_proc_fds(sock) ? -1 : receive_configuration(sock);
  char err[256];
  if (ring_fd < 0 || g_config.num_heaps > HPD_MAX_HEAPS || srb_attach(&g_ring, ring_fd, 1, err, sizeof(err)) != 0 ||
      (g_shared.interval = malloc_interval()) == 0) {
    if (sock >= 0) {
      close(sock);
    }
    set_state(STATE_STOPPED);
    return;
  }
  g_socket = sock;
  g_seed = (uint64_t)getpid() << 32 ^ (uint64_t)time(NULL) ^ (uint64_t)(uintptr_t)&g_seed;
  set_state(STATE_ACTIVE);
}

static void stop(void) {
  set_state(STATE_STOPPED);
}

// Copies stack memory one word at a time: a fortified memcpy can refuse to read across
// a stack frame's guard, which is exactly what this copy does.
__attribute__((noinline, no_sanitize_address)) static void copy_stack(uint8_t* to, const uintptr_t* from,
                                                                       size_t words) {
  for (size_t i = 0; i < words; i++) {
    uintptr_t word = ((volatile const uintptr_t*)from)[i];
    memcpy(to + i * sizeof(word), &word, sizeof(word));
  }
}

// Whether the service still holds its end of the socket: it sends nothing after the
// configuration until the exit handshake, so a peek finds nothing to read while it does,
// and the end of the stream once it hung up.
static int service_connected(void) {
  char byte;
  ssize_t n = recv(g_socket, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n > 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR));
}

// Reserves a record of `size` bytes under the ring's lock, waiting for room only when the
// configuration says so and, as Perfetto's client does, only while the service is there
// (a service that hung up never frees the room); 0 (and the client stopped for good) when
// it cannot. Called with g_lock held.
static int reserve_record(uint64_t size, srb_record* record) {
  struct timespec backoff = {0, 100 * 1000};
  uint64_t waited_us = 0;
  for (;;) {
    if (!srb_lock(&g_ring, 0)) {
      stop();
      return 0;
    }
    srb_result result = srb_begin_write(&g_ring, size, record);
    srb_unlock(&g_ring);
    if (result == SRB_OK) {
      return 1;
    }
    int wait = result == SRB_NO_SPACE && g_config.block_client &&
               (g_config.block_client_timeout_us == 0 || waited_us < g_config.block_client_timeout_us) &&
               service_connected();
    if (!wait) {
      stop();
      return 0;
    }
    nanosleep(&backoff, NULL);
    waited_us += 100;
  }
}

// Commits a filled record and wakes the service if its reader paused (it sleeps until
// woken), as Perfetto's client does; a free, cheap for the service, wakes it only once the
// ring is half full and otherwise waits for the next allocation's record: a wake-up byte
// costs ten times the rest of a hook. A service that has gone stops the client.
static void publish_record(const srb_record* record, int is_free) {
  srb_end_write(&g_ring, record);
  if ((is_free && record->bytes_free >= g_ring.size / 2) || !srb_get_and_reset_reader_paused(&g_ring)) {
    return;
  }
  char byte = 1;
  if (send(g_socket, &byte, 1, MSG_DONTWAIT | MSG_NOSIGNAL) < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
    stop();
  }
}

// Called with g_lock held.
__attribute__((noinline)) static void record_malloc(void* ptr, size_t size, uint64_t sampled) {
  uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
  hpd_alloc_metadata metadata;
  memset(&metadata, 0, sizeof(metadata));
  uintptr_t end = hpd_stack_end(sp);
  size_t bytes = end > sp ? end - sp : 0;
  if (bytes > MAX_STACK_COPY) {
    bytes = MAX_STACK_COPY;
  }
  bytes -= bytes % sizeof(uintptr_t);
#if defined(__x86_64__)
  // The registers as they will be once this function returns to its caller (the slow path),
  // so that pc, frame pointer and stack pointer describe one frame: rip the return
  // address, rbp the caller's frame pointer this frame saved, rsp past this frame's two
  // words. unwindstack's x86-64 order: rax rdx rcx rbx rsi rdi rbp rsp r8..r15 rip.
  uint64_t* regs = (uint64_t*)metadata.register_data;
  regs[6] = (uint64_t)*(const uintptr_t*)sp;
  regs[7] = sp + 2 * sizeof(uintptr_t);
  regs[16] = (uint64_t)(uintptr_t)__builtin_return_address(0);
  metadata.arch = 4;
#endif
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
  metadata.sequence_number = ++g_sequence_number;
  metadata.alloc_size = size;
  metadata.sample_size = sampled;
  metadata.alloc_address = (uint64_t)(uintptr_t)ptr;
  metadata.stack_pointer = sp;
  metadata.clock_monotonic_coarse_timestamp = (uint64_t)now.tv_sec * 1000000000ULL + (uint64_t)now.tv_nsec;
  metadata.heap_id = HEAP_ID;
  srb_record record;
  if (!reserve_record(8 + sizeof(metadata) + bytes, &record)) {
    return;
  }
  uint64_t type = HPD_RECORD_MALLOC;
  memcpy(record.data, &type, 8);
  memcpy(record.data + 8, &metadata, sizeof(metadata));
  // The stack goes straight into the ring: no copy of it in between.
  copy_stack(record.data + 8 + sizeof(metadata), (const uintptr_t*)sp, bytes / sizeof(uintptr_t));
  publish_record(&record, 0);
}

static void record_free(void* ptr) {
  hpd_free_entry entry;
  memset(&entry, 0, sizeof(entry));
  entry.sequence_number = ++g_sequence_number;
  entry.addr = (uint64_t)(uintptr_t)ptr;
  entry.heap_id = HEAP_ID;
  srb_record record;
  if (!reserve_record(8 + sizeof(entry), &record)) {
    return;
  }
  uint64_t type = HPD_RECORD_FREE;
  memcpy(record.data, &type, 8);
  memcpy(record.data + 8, &entry, sizeof(entry));
  publish_record(&record, 1);
}

// Spins a while, then yields the CPU at each look: a holder preempted by a thread that
// spins on (more threads than cores) would otherwise get the CPU back only when the
// spinner's time slice ends. sched_yield is a system call, with no lock of libc's.
static void lock(void) {
  for (unsigned spins = 0; atomic_flag_test_and_set_explicit(&g_lock, memory_order_acquire); spins++) {
    if (spins < LOCK_SPINS) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    } else {
      sched_yield();
    }
  }
}

static void unlock(void) {
  atomic_flag_clear_explicit(&g_lock, memory_order_release);
}

static int active(void) {
  return atomic_load_explicit(&g_shared.state, memory_order_relaxed) == STATE_ACTIVE;
}

// Brings the thread's sampler up to the client's state, starting the client if one was
// asked for: while active, a fresh gap (gaps are memoryless, so one cut short is no bias);
// otherwise nothing to sample until the epoch changes. The epoch is read before the state,
// so that a change in between only brings the thread here once more.
static void resync(void) {
  unsigned epoch = atomic_load_explicit(&g_shared.epoch, memory_order_acquire);
  int state = atomic_load_explicit(&g_shared.state, memory_order_acquire);
  if (state == STATE_OFF && atomic_load_explicit(&g_shared.start_requested, memory_order_relaxed)) {
    lock();
    if (atomic_load_explicit(&g_shared.state, memory_order_relaxed) == STATE_OFF) {
      start();
    }
    unlock();
    epoch = atomic_load_explicit(&g_shared.epoch, memory_order_acquire);
    state = atomic_load_explicit(&g_shared.state, memory_order_acquire);
  }
  t_client.epoch = epoch;
  if (state != STATE_ACTIVE) {
    t_client.interval = 0;
    t_client.limit = UINT64_MAX;
    t_client.bytes_to_next_sample = INT64_MAX;
    return;
  }
  if (t_client.random == 0) {
    uint64_t n = atomic_fetch_add_explicit(&g_threads_seeded, 1, memory_order_relaxed);
    // xorshift's one forbidden state is 0.
    t_client.random = splitmix64_of(g_seed + n * 0x9e3779b97f4a7c15ULL) | 1;
  }
  t_client.interval = g_shared.interval;
  t_client.limit = g_shared.interval;
  t_client.bytes_to_next_sample = next_sample_interval();
}

// Enters the client on this thread: 0 when the thread is in it already (a hook re-entered
// from a signal handler, or from what the client calls), else 1, with errno and the
// cancellation state kept, and cancellation off. The flag is set before anything the
// client does (a compiler fence: a signal handler on this thread must see it).
static inline __attribute__((always_inline)) int enter_client(client_entry* entry) {
  if (t_client.in_client) {
    return 0;
  }
  t_client.in_client = 1;
  atomic_signal_fence(memory_order_seq_cst);
  entry->errno_value = errno;
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &entry->cancel_state);
  return 1;
}

static inline __attribute__((always_inline)) void leave_client(const client_entry* entry) {
  int ignored;
  pthread_setcancelstate(entry->cancel_state, &ignored);
  errno = entry->errno_value;
  atomic_signal_fence(memory_order_seq_cst);
  t_client.in_client = 0;
}

int hpd_client_enter(client_entry* entry) {
  return enter_client(entry);
}

void hpd_client_leave(const client_entry* entry) {
  leave_client(entry);
}

// An allocation the hook's compares did not let through: a sample, or the thread's
// sampler to set up.
__attribute__((noinline)) static void* allocation_slow_path(void* ptr, size_t size) {
  client_entry entry;
  if (!enter_client(&entry)) {
    return ptr;
  }
  if (t_client.epoch != atomic_load_explicit(&g_shared.epoch, memory_order_acquire)) {
    resync();
  }
  if (ptr != NULL && t_client.interval != 0) {
    uint64_t sampled = sample_size(size);
    if (sampled != 0) {
      // A signal handler's allocations while this one is recorded are not sampled: they
      // do not draw the thread's gap down either.
      int64_t left = t_client.bytes_to_next_sample;
      lock();
      if (active()) {
        record_malloc(ptr, size, sampled);
      }
      unlock();
      t_client.bytes_to_next_sample = left;
    }
  }
  leave_client(&entry);
  return ptr;
}

static inline __attribute__((always_inline)) void* recorded(void* ptr, size_t size) {
  int64_t left = (int64_t)((uint64_t)t_client.bytes_to_next_sample - size);
  if (__builtin_expect(size < t_client.limit && left > 0 &&
                           t_client.epoch == atomic_load_explicit(&g_shared.epoch, memory_order_relaxed),
                       1)) {
    t_client.bytes_to_next_sample = left;
    return ptr;
  }
  return allocation_slow_path(ptr, size);
}

__attribute__((noinline)) static void free_slow_path(void* ptr) {
  client_entry entry;
  if (!enter_client(&entry)) {
    return;
  }
  lock();
  if (active()) {
    record_free(ptr);
  }
  unlock();
  leave_client(&entry);
}

static inline __attribute__((always_inline)) void recorded_free(void* ptr) {
  if (ptr != NULL && __builtin_expect(active(), 0)) {
    free_slow_path(ptr);
  }
}

void* malloc(size_t size) {
  return recorded(__libc_malloc(size), size);
}

void* calloc(size_t count, size_t size) {
  return recorded(__libc_calloc(count, size), count * size);
}

void* memalign(size_t alignment, size_t size) {
  return recorded(__libc_memalign(alignment, size), size);
}

void* aligned_alloc(size_t alignment, size_t size) {
  return recorded(__libc_memalign(alignment, size), size);
}

int posix_memalign(void** out, size_t alignment, size_t size) {
  if (alignment < sizeof(void*) || (alignment & (alignment - 1)) != 0) {
    return EINVAL;
  }
  void* ptr = __libc_memalign(alignment, size);
  if (ptr == NULL) {
    return ENOMEM;
  }
  *out = recorded(ptr, size);
  return 0;
}

void free(void* ptr) {
  recorded_free(ptr);
  __libc_free(ptr);
}

void* realloc(void* ptr, size_t size) {
  recorded_free(ptr);
  return recorded(__libc_realloc(ptr, size), size);
}

// Lock-free atomics only: async-signal-safe.
static void on_profiler_signal(int signal) {
  (void)signal;
  atomic_store_explicit(&g_shared.start_requested, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&g_shared.epoch, 1, memory_order_release);
}

// Around fork the lock is held, so that no other thread is half-way through a record in
// the child's copy of the client; the child then stops, with the lock free.
static void before_fork(void) {
  t_client.in_client = 1;
  lock();
}

static void in_forked_parent(void) {
  unlock();
  t_client.in_client = 0;
}

static void in_forked_child(void) {
  set_state(STATE_STOPPED);
  unlock();
  t_client.in_client = 0;
}

// At exit, outside any hook: says so (HPD_EXITING, a wake-up too) and waits, at most
// EXIT_DRAIN_MS, for the service's answer (HPD_EXIT_READ: it has read this process's
// /proc/PID/maps, against which it unwinds what is left in the ring once the process is
// gone) or, from a service that does not answer (Perfetto's), until it has read the ring.
// The maps matter for code loaded after the handshake (a JVM's libjvm): a backlog read
// after the exit without them had every stack through that code end in INVALID_MAP (a
// loaded machine: all of `java -version`'s libjvm allocations, 6.9 MB). Waiting for the
// whole backlog instead cost a JVM tens of milliseconds at each exit.
#define EXIT_DRAIN_MS 3000
__attribute__((destructor)) static void drain_at_exit(void) {
  if (!active()) {
    return;
  }
  t_client.in_client = 1;
  char byte = HPD_EXITING;
  send(g_socket, &byte, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
  for (int waited = 0; waited < EXIT_DRAIN_MS && srb_unread_bytes(&g_ring) > 0; waited++) {
    struct pollfd readable = {.fd = g_socket, .events = POLLIN};
    if (poll(&readable, 1, 1) == 1) {
      char answer;
      ssize_t n = recv(g_socket, &answer, 1, MSG_DONTWAIT);
      // The answer, the end of the stream, or a broken socket: nothing more to wait for.
      if (n == 0 || (n == 1 && answer == HPD_EXIT_READ) || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        break;
      }
    }
  }
  t_client.in_client = 0;
}

// Outside any hook: what needs a lock or an allocation is done here, the client's own
// (unprofiled).
__attribute__((constructor)) static void initialize(void) {
  t_client.in_client = 1;
  hpd_stack_init();
  struct sigaction action;
  memset(&action, 0, sizeof(action));
  action.sa_handler = on_profiler_signal;
  action.sa_flags = SA_RESTART;
  sigaction(SIGRTMIN + PROFILER_SIGNAL_OFFSET, &action, NULL);
  pthread_atfork(before_fork, in_forked_parent, in_forked_child);
  if (getenv("FFMTRACE_HEAPPROFD_SOCKET") != NULL) {
    atomic_store_explicit(&g_shared.start_requested, 1, memory_order_relaxed);
  }
  t_client.in_client = 0;
}
