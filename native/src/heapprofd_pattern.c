// The program heapprofd-client's tests profile with the preloaded C client: a known
// pattern of allocations, 1,000 blocks of 1,000 bytes from a() and 1,000 of 3,000 bytes
// from b(), then half of b()'s freed. The sizes are ones libc does not allocate itself.
// Built with frame pointers, so that its stacks unwind without DWARF.
#include <stdio.h>
#include <stdlib.h>

enum { BLOCKS = 1000 };

__attribute__((noinline)) static void* a(void) {
  return malloc(1000);
}

__attribute__((noinline)) static void* b(void) {
  return malloc(3000);
}

int main(void) {
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
