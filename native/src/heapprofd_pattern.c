// The program heapprofd-client's tests profile with the preloaded C client: a known
// pattern of allocations, 1,000 blocks of 1,000 bytes from a() and 1,000 of 3,000 bytes
// from b(), then half of b()'s freed. The sizes are ones libc does not allocate itself.
// Built with frame pointers and without tail calls, so that its stacks unwind without
// DWARF. With the argument "fork", b()'s blocks are allocated by a forked child instead,
// which the client does not follow. With "deep", it only allocates 5,000 bytes from c()
// beneath deep(), whose frame is larger than the client's 64 KiB stack copy, then waits
// for a line on stdin before it exits, so that the service reads the rest of that stack
// from the live process. With "threads", 4 threads at once each allocate 1,000 blocks of
// 2,000 bytes from t(), none freed, and nothing else. With "loop", it allocates 4,000 bytes
// from l() and frees them, for ever, so that a test can kill it in the middle of a write.
// With "altstack", only a signal handler running on an alternate signal stack allocates,
// 7,000 bytes from h(); the stack is 64 KiB of its own mapping with an inaccessible page
// right above it, so that a copy of the stack that ran past its end would fault. With
// "timer", only a timer's thread allocates (SIGEV_THREAD: glibc creates that thread
// itself, not through pthread_create), 6,000 bytes from u(), and the program prints the
// end of that thread's stack as pthread_getattr_np gives it. With "signal", the pattern
// as without arguments, and SIGUSR1's handler allocates and frees 4,321 bytes, then writes
// "handled" on a line of its own.
#define _GNU_SOURCE
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { BLOCKS = 1000, THREADS = 4 };

__attribute__((noinline)) static void* a(void) {
  return malloc(1000);
}

__attribute__((noinline)) static void* b(void) {
  return malloc(3000);
}

__attribute__((noinline)) static void* c(void) {
  return malloc(5000);
}

__attribute__((noinline)) static void* l(void) {
  return malloc(4000);
}

__attribute__((noinline)) static void* t(void) {
  return malloc(2000);
}

__attribute__((noinline)) static void* h(void) {
  return malloc(7000);
}

__attribute__((noinline)) static void* u(void) {
  return malloc(6000);
}

static void* from_h;

static void allocate_from_h(int signal) {
  (void)signal;
  from_h = h();
}

static int on_alternate_stack(void) {
  enum { ALT_STACK = 64 * 1024 };
  long page = sysconf(_SC_PAGESIZE);
  char* region = mmap(NULL, ALT_STACK + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (region == MAP_FAILED || mprotect(region + ALT_STACK, page, PROT_NONE) != 0) {
    return 1;
  }
  stack_t alt = {.ss_sp = region, .ss_size = ALT_STACK};
  struct sigaction action;
  memset(&action, 0, sizeof(action));
  action.sa_handler = allocate_from_h;
  action.sa_flags = SA_ONSTACK;
  if (sigaltstack(&alt, NULL) != 0 || sigaction(SIGUSR1, &action, NULL) != 0) {
    return 1;
  }
  raise(SIGUSR1);
  printf("%p\n", from_h);
  return from_h == NULL;
}

// Through a volatile pointer: the compiler drops a free(malloc(n)) it can see.
static void* volatile from_handler;

static void allocate_in_handler(int signal) {
  (void)signal;
  from_handler = malloc(4321);
  free(from_handler);
  static const char handled[] = "handled\n";
  ssize_t written = write(STDOUT_FILENO, handled, sizeof(handled) - 1);
  (void)written;
}

static sem_t timer_done;
static void* from_u;
static void* u_stack_end;

static void allocate_from_u(union sigval value) {
  (void)value;
  from_u = u();
  pthread_attr_t attr;
  void* base;
  size_t size;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    if (pthread_attr_getstack(&attr, &base, &size) == 0) {
      u_stack_end = (char*)base + size;
    }
    pthread_attr_destroy(&attr);
  }
  sem_post(&timer_done);
}

static int on_timer_thread(void) {
  sem_init(&timer_done, 0, 0);
  struct sigevent event;
  memset(&event, 0, sizeof(event));
  event.sigev_notify = SIGEV_THREAD;
  event.sigev_notify_function = allocate_from_u;
  timer_t timer;
  struct itimerspec once = {.it_value = {0, 1000 * 1000}};
  if (timer_create(CLOCK_MONOTONIC, &event, &timer) != 0 || timer_settime(timer, 0, &once, NULL) != 0) {
    return 1;
  }
  while (sem_wait(&timer_done) != 0) {
  }
  printf("%p %p\n", from_u, u_stack_end);
  return from_u == NULL || u_stack_end == NULL;
}

static void* allocate_from_t(void* blocks) {
  for (int i = 0; i < BLOCKS; i++) {
    ((void**)blocks)[i] = t();
  }
  return NULL;
}

__attribute__((noinline)) static void* deep(void) {
  volatile char pad[96 * 1024];
  pad[0] = 1;
  void* block = c();
  // Keeps pad, and so the frame's size, live across the call.
  pad[sizeof(pad) - 1] = 2;
  return block;
}

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "deep") == 0) {
    printf("%p\n", deep());
    fflush(stdout);
    return getchar() == EOF;
  }
  if (argc > 1 && strcmp(argv[1], "altstack") == 0) {
    return on_alternate_stack();
  }
  if (argc > 1 && strcmp(argv[1], "timer") == 0) {
    return on_timer_thread();
  }
  if (argc > 1 && strcmp(argv[1], "loop") == 0) {
    for (;;) {
      free(l());
    }
  }
  if (argc > 1 && strcmp(argv[1], "threads") == 0) {
    static void* from_t[THREADS][BLOCKS];
    pthread_t threads[THREADS];
    for (int i = 0; i < THREADS; i++) {
      pthread_create(&threads[i], NULL, allocate_from_t, from_t[i]);
    }
    for (int i = 0; i < THREADS; i++) {
      pthread_join(threads[i], NULL);
    }
    printf("%p\n", from_t[0][0]);
    return 0;
  }
  if (argc > 1 && strcmp(argv[1], "signal") == 0) {
    struct sigaction action;
    memset(&action, 0, sizeof(action));
    action.sa_handler = allocate_in_handler;
    action.sa_flags = SA_RESTART;
    sigaction(SIGUSR1, &action, NULL);
  }
  static void* from_a[BLOCKS];
  static void* from_b[BLOCKS];
  for (int i = 0; i < BLOCKS; i++) {
    from_a[i] = a();
  }
  if (argc > 1 && strcmp(argv[1], "fork") == 0) {
    pid_t child = fork();
    if (child == 0) {
      for (int i = 0; i < BLOCKS; i++) {
        from_b[i] = b();
      }
      _exit(from_b[BLOCKS - 1] == NULL);
    }
    int status;
    waitpid(child, &status, 0);
    printf("%p child %d\n", from_a[0], WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return 0;
  }
  for (int i = 0; i < BLOCKS; i++) {
    from_b[i] = b();
  }
  for (int i = 0; i < BLOCKS / 2; i++) {
    free(from_b[i]);
  }
  printf("%p %p\n", from_a[0], from_b[0]);
  return 0;
}
