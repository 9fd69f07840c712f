// SharedRingBufferBenchmark's loops in C, over shm-ring's C implementation (Perfetto's
// memory orders), so the Java numbers can be set beside C measured on the same machine in
// the same session. The VM these benchmarks run on changes speed by minutes; compare
// alternated runs, never one run against a number taken another day.
//
//   ring_bench write-then-read <size> [rounds]   one thread; best and median ns per record
//   ring_bench threads <size> [seconds]          writer and reader threads; records/s and
//                                                the CPU the process used, each second
// Built by native/Makefile (native/target/bin/ring_bench); scripts/ring-bench-c makes and
// runs it.
#define _GNU_SOURCE
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "ffmtrace_util.h"
#include "shared_ring_buffer.h"

#define RING_SIZE (8u << 20)

static srb ring;
static size_t size;
static unsigned char* source;
static atomic_int stop;
static _Alignas(128) atomic_long records_read;  // published by the reader, read by main
static _Alignas(128) long reads;                 // the reader's own count and sum
static long checksum;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static double cpu_seconds(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_utime.tv_usec * 1e-6 + u.ru_stime.tv_sec + u.ru_stime.tv_usec * 1e-6;
}

// As the Java Writer.write: try-lock, reserve, unlock, bulk copy, commit.
static int write_one(void) {
  srb_record r;
  if (!srb_lock(&ring, 0)) return 0;
  srb_result result = srb_begin_write(&ring, size, &r);
  srb_unlock(&ring);
  if (result != SRB_OK) return 0;
  memcpy(r.data, source, size);
  srb_end_write(&ring, &r);
  return 1;
}

// As the Java Reader.read: next record, touch its first and last byte, free it.
static int read_one(void) {
  srb_record r;
  if (srb_begin_read(&ring, &r) != SRB_OK) return 0;
  checksum += r.data[0] + r.data[r.size - 1];
  reads++;
  srb_end_read(&ring, &r);
  return 1;
}

static int compare_doubles(const void* a, const void* b) {
  double x = *(const double*) a, y = *(const double*) b;
  return (x > y) - (x < y);
}

static void write_then_read(int rounds) {
  long per_round = size >= 65536 ? 50000 : 2000000;
  double* ns = calloc(rounds, sizeof(double));
  for (int round = 0; round < rounds; round++) {
    double start = now();
    for (long i = 0; i < per_round; i++) {
      write_one();
      read_one();
    }
    ns[round] = (now() - start) * 1e9 / per_round;
  }
  // The first rounds warm the caches and the ring's pages.
  int skip = rounds / 4;
  qsort(ns + skip, rounds - skip, sizeof(double), compare_doubles);
  printf("write-then-read %zu B: best %.1f ns, median %.1f ns per record\n", size, ns[skip],
         ns[skip + (rounds - skip) / 2]);
  free(ns);
}

static void* writer_loop(void* unused) {
  (void) unused;
  while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
    if (!write_one()) sched_yield();
  }
  return NULL;
}

static void* reader_loop(void* unused) {
  (void) unused;
  while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
    if (read_one()) {
      atomic_store_explicit(&records_read, reads, memory_order_relaxed);
    } else {
      sched_yield();
    }
  }
  return NULL;
}

static void threads(int seconds) {
  pthread_t writer, reader;
  pthread_create(&reader, NULL, reader_loop, NULL);
  pthread_create(&writer, NULL, writer_loop, NULL);
  printf("threads %zu B, M records/s (CPU %%) each second:", size);
  long last = 0;
  for (int s = 0; s < seconds; s++) {
    double start = now(), cpu_start = cpu_seconds();
    struct timespec second = {1, 0};
    nanosleep(&second, NULL);
    long count = atomic_load(&records_read);
    double elapsed = now() - start;
    printf(" %.2f (%.0f%%)", (count - last) / elapsed / 1e6, 100 * (cpu_seconds() - cpu_start) / elapsed);
    fflush(stdout);
    last = count;
  }
  printf("\n");
  atomic_store(&stop, 1);
  pthread_join(writer, NULL);
  pthread_join(reader, NULL);
}

int main(int argc, char** argv) {
  if (argc < 3 || (strcmp(argv[1], "write-then-read") != 0 && strcmp(argv[1], "threads") != 0)) {
    fprintf(stderr, "usage: ring_bench write-then-read|threads <size> [rounds|seconds]\n");
    return 2;
  }
  uint64_t parsed;
  if (parse_u64(argv[2], RING_SIZE - 8, &parsed) != 0 || parsed == 0) {
    fprintf(stderr, "ring_bench: size must be 1..%u\n", RING_SIZE - 8);
    return 2;
  }
  size = (size_t)parsed;
  char error[256];
  if (srb_create(&ring, RING_SIZE, error, sizeof error) != 0) {
    fprintf(stderr, "ring_bench: %s\n", error);
    return 1;
  }
  source = malloc(size);
  for (size_t i = 0; i < size; i++) source[i] = (unsigned char) (i * 31 + 7);
  int threaded = strcmp(argv[1], "threads") == 0;
  uint64_t count = threaded ? 6 : 20;
  if (argc > 3 && (parse_u64(argv[3], INT_MAX, &count) != 0 || count < 1)) {
    fprintf(stderr, "ring_bench: rounds or seconds must be at least 1\n");
    return 2;
  }
  if (threaded) {
    threads((int)count);
  } else {
    write_then_read((int)count);
  }
  if (checksum != reads * ((long) source[0] + source[size - 1])) {
    fprintf(stderr, "ring_bench: reader saw wrong bytes\n");
    return 1;
  }
  srb_close(&ring);
  return 0;
}
