// The program heapprofd-service's CFI tests profile with the preloaded C client, built
// without frame pointers: only the .eh_frame the compiler emits unwinds its stacks.
// 1,000 blocks of 1,000 bytes from a() and 1,000 of 3,000 bytes from b(), then half of
// b()'s freed, as heapprofd_pattern does. With the argument "qsort", it only sorts an
// array whose comparison function allocates 7,000 bytes and frees them at each call, so
// that the stacks go through libc's qsort, which has no frame pointers either. Built
// without tail calls, so that a() and b() keep frames of their own.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { BLOCKS = 1000, ELEMENTS = 100 };

__attribute__((noinline)) static void* a(void) {
  return malloc(1000);
}

__attribute__((noinline)) static void* b(void) {
  // Locals, so that b()'s frame is larger than its return address.
  volatile char pad[64];
  pad[0] = 1;
  void* block = malloc(3000);
  pad[sizeof(pad) - 1] = 2;
  return block;
}

__attribute__((noinline)) static int compare(const void* x, const void* y) {
  // volatile: the compiler would drop a block freed unused.
  void* volatile block = malloc(7000);
  free(block);
  return *(const int*)x - *(const int*)y;
}

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "qsort") == 0) {
    static int elements[ELEMENTS];
    for (int i = 0; i < ELEMENTS; i++) {
      elements[i] = (i * 37) % ELEMENTS;
    }
    qsort(elements, ELEMENTS, sizeof(elements[0]), compare);
    printf("%d %d\n", elements[0], elements[ELEMENTS - 1]);
    return 0;
  }
  static void* from_a[BLOCKS];
  static void* from_b[BLOCKS];
  for (int i = 0; i < BLOCKS; i++) {
    from_a[i] = a();
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
