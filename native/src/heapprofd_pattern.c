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
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
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
