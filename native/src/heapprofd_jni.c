// A JNI library for heapprofd's JVM tests (dev.ffmtrace.memory.testing.JniAllocatingMethod):
// its native methods malloc and free in C, so that a profile of the JVM must show this C
// function under the Java method that called it. Static native methods with primitive
// arguments take (JNIEnv *, jclass, args...) in the platform's C calling convention, so
// no jni.h is needed (and the build needs no JDK). Built with frame pointers and without
// tail calls: allocate's frame stays on the stack while malloc runs.
#include <stdint.h>
#include <stdlib.h>

__attribute__((visibility("default"), noinline)) int64_t
Java_dev_ffmtrace_memory_testing_JniAllocatingMethod_allocate(void *env, void *type, int64_t size) {
  (void)env;
  (void)type;
  return (int64_t)(intptr_t)malloc((size_t)size);
}

__attribute__((visibility("default"), noinline)) void
Java_dev_ffmtrace_memory_testing_JniAllocatingMethod_release(void *env, void *type, int64_t address) {
  (void)env;
  (void)type;
  free((void *)(intptr_t)address);
}
