// Where each thread's stack ends, for the preloaded heapprofd client's copy of the stack
// with each sample (heapprofd_client.c), found under the client's rule: nothing inside a
// hook may take a lock or allocate. glibc's pthread_getattr_np does both (it callocs under
// the thread's own lock, and HotSpot calls it: a hook that called it again deadlocked the
// thread on itself), and so does reading /proc/self/maps through stdio. So the bounds are
// learnt where no hook is running: the main thread's (the mapping its stack pointer is in)
// in the client's constructor, every other thread's at its start, through the client's
// pthread_create, which starts the thread in a function of its own that asks
// pthread_getattr_np first. A thread neither saw (one glibc starts itself, for a timer or
// AIO; one started before the constructor ran) has its bounds read from /proc/self/maps
// in the hook with open, read and close alone, once.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "heapprofd_client_stack.h"

extern void* __libc_malloc(size_t size);
extern void __libc_free(void* ptr);

// The granularity of "sp's own page": the smallest page size; a larger page holds it.
enum { MIN_PAGE_SIZE = 4096 };
// How much of /proc/self/maps a look-up reads at most: a bound on the hook's work, far
// above any real process's (a JVM's is a few hundred KiB).
#define MAX_MAPS_BYTES ((size_t)64 * 1024 * 1024)

// The thread's stack, [low, end); 0, 0 until known. initial-exec, as the client's state.
static __thread struct {
  uintptr_t low;
  uintptr_t end;
} t_stack __attribute__((tls_model("initial-exec")));

// The main thread's stack pointer at process start (ld.so's): above it are only argv,
// envp, the auxiliary vector and their strings, no frames.
extern void* __libc_stack_end;

typedef int (*pthread_create_fn)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);

// The mapping of /proc/self/maps that holds addr, as [*low, *high): open, read and close
// alone (hook-safe), a fixed buffer on the stack, the lines parsed as they stream past
// (the first two hex fields of each), at most MAX_MAPS_BYTES read. 0 when not found.
static int mapping_of(uintptr_t addr, uintptr_t* low, uintptr_t* high) {
  int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return 0;
  }
  char buf[512];
  enum { START, END, REST } field = START;
  uintptr_t start = 0;
  uintptr_t end = 0;
  int found = 0;
  size_t total = 0;
  while (!found && total < MAX_MAPS_BYTES) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      break;
    }
    total += (size_t)n;
    for (ssize_t i = 0; i < n && !found; i++) {
      char c = buf[i];
      int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
      if (c == '\n') {
        field = START;
        start = end = 0;
      } else if (field == REST) {
        continue;
      } else if (digit >= 0) {
        if (field == START) {
          start = start << 4 | (uintptr_t)digit;
        } else {
          end = end << 4 | (uintptr_t)digit;
        }
      } else if (field == START && c == '-') {
        field = END;
      } else {
        found = field == END && c == ' ' && start <= addr && addr < end;
        field = REST;
      }
    }
  }
  close(fd);
  if (found) {
    *low = start;
    *high = end;
  }
  return found;
}

// The end of the stack that holds sp, for the copy [sp, end). The thread's bounds are
// cached: set at its start (the main thread's in the constructor, another's by the
// pthread_create interposer), else found here in /proc/self/maps the first time. A
// stack pointer outside them is on the signal stack (sigaltstack, a system call), or on
// the main thread's stack grown down since (/proc/self/maps again), or somewhere
// unknown: then only to the end of sp's own page, which is mapped since the recording
// frame is on it (the service reads the rest from /proc/PID/mem if it needs it). Never
// a fixed size past what is known: that could run off the stack's mapping and fault.
uintptr_t hpd_stack_end(uintptr_t sp) {
  if (sp >= t_stack.low && sp < t_stack.end) {
    return t_stack.end;
  }
  stack_t alt;
  if (sigaltstack(NULL, &alt) == 0 && (alt.ss_flags & SS_ONSTACK) != 0 && sp >= (uintptr_t)alt.ss_sp &&
      sp - (uintptr_t)alt.ss_sp < alt.ss_size) {
    return (uintptr_t)alt.ss_sp + alt.ss_size;
  }
  uintptr_t low;
  uintptr_t high;
  if (mapping_of(sp, &low, &high)) {
    // The thread's own stack, first seen or grown down: its top is where it was.
    if (t_stack.end == 0 || high == t_stack.end) {
      t_stack.low = low;
      t_stack.end = high;
    }
    return high;
  }
  return (sp | (MIN_PAGE_SIZE - 1)) + 1;
}

// The real pthread_create: found in the constructor, or by the first thread created
// before it ran (dlsym locks and allocates, so never from a hook).
static _Atomic(pthread_create_fn) g_pthread_create;

typedef struct {
  void* (*routine)(void*);
  void* arg;
} thread_start;

// The new thread's stack bounds, before its routine runs and outside any hook:
// pthread_getattr_np takes the thread's lock and allocates, which is safe here alone
// (what it allocates passes the hooks unsampled, the thread being in the client). Exact
// where /proc/self/maps would need a read of the whole file per thread.
__attribute__((noinline)) static void learn_thread_stack(void) {
  client_entry entry;
  if (!hpd_client_enter(&entry)) {
    return;
  }
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    void* base;
    size_t size;
    if (pthread_attr_getstack(&attr, &base, &size) == 0) {
      t_stack.low = (uintptr_t)base;
      t_stack.end = (uintptr_t)base + size;
    }
    pthread_attr_destroy(&attr);
  }
  hpd_client_leave(&entry);
}

// Every thread the program creates starts here: its bounds learnt, then its routine,
// called last so that the compiler makes it a jump and the thread's stacks hold no frame
// of the client's (HeapprofdServiceTest checks that none shows).
static void* start_thread_with_bounds(void* argument) {
  thread_start start = *(thread_start*)argument;
  __libc_free(argument);
  learn_thread_stack();
  return start.routine(start.arg);
}

int pthread_create(pthread_t* thread, const pthread_attr_t* attr, void* (*routine)(void*), void* arg) {
  pthread_create_fn real = atomic_load_explicit(&g_pthread_create, memory_order_acquire);
  if (real == NULL) {
    real = (pthread_create_fn)dlsym(RTLD_NEXT, "pthread_create");
    if (real == NULL) {
      return EAGAIN;
    }
    atomic_store_explicit(&g_pthread_create, real, memory_order_release);
  }
  thread_start* start = __libc_malloc(sizeof(thread_start));
  if (start == NULL) {
    // The thread's hooks find its bounds in /proc/self/maps.
    return real(thread, attr, routine, arg);
  }
  start->routine = routine;
  start->arg = arg;
  int result = real(thread, attr, start_thread_with_bounds, start);
  if (result != 0) {
    __libc_free(start);
  }
  return result;
}

void hpd_stack_init(void) {
  atomic_store_explicit(&g_pthread_create, (pthread_create_fn)dlsym(RTLD_NEXT, "pthread_create"),
                        memory_order_release);
  // The loading thread's stack (the main thread's when preloaded): the mapping it is on,
  // for the main thread only up to the page past __libc_stack_end, as glibc's
  // pthread_getattr_np has it: every sample's copy would carry the environment otherwise.
  uintptr_t low;
  uintptr_t high;
  if (mapping_of((uintptr_t)__builtin_frame_address(0), &low, &high)) {
    uintptr_t start_sp = (uintptr_t)__libc_stack_end;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    if (start_sp >= low && start_sp < high && page != 0) {
      high = (start_sp | (page - 1)) + 1;
    }
    t_stack.low = low;
    t_stack.end = high;
  }
}
