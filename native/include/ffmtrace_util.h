// What several C programs here share: SplitMix64 and FNV-1a, whose exact outputs the
// Java side checks in some records, checked parsing of the numbers programs take from
// their command line, and a clock's time in nanoseconds.
#ifndef FFMTRACE_UTIL_H_
#define FFMTRACE_UTIL_H_

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

// Clock `clock`'s time in nanoseconds (CLOCK_BOOTTIME is the trace clock, CLOCK_MONOTONIC
// the one for intervals).
static inline long long clock_ns(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

// SplitMix64's output for state `x` (its mix of x + the golden gamma).
static inline uint64_t splitmix64_of(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// The next number of a SplitMix64 sequence, advancing *state.
static inline uint64_t splitmix64(uint64_t* state) {
  uint64_t x = *state;
  *state += 0x9e3779b97f4a7c15ULL;
  return splitmix64_of(x);
}

#define FNV1A32_OFFSET 2166136261u

// 32-bit FNV-1a of `size` bytes, continuing from `hash` (FNV1A32_OFFSET to start).
static inline uint32_t fnv1a32(uint32_t hash, const void* data, size_t size) {
  const uint8_t* p = data;
  for (size_t i = 0; i < size; i++) hash = (hash ^ p[i]) * 16777619u;
  return hash;
}

// Parses all of `text` as a decimal number from 0 to `max`: digits only, so no sign, no
// spaces and no empty string. 0, or -1 (*out untouched) if it is not one.
static inline int parse_u64(const char* text, uint64_t max, uint64_t* out) {
  if (*text == '\0') return -1;
  uint64_t value = 0;
  for (const char* c = text; *c != '\0'; c++) {
    if (*c < '0' || *c > '9') return -1;
    uint64_t digit = (uint64_t)(*c - '0');
    if (digit > max || value > (max - digit) / 10) return -1;
    value = value * 10 + digit;
  }
  *out = value;
  return 0;
}

static inline int parse_u32(const char* text, uint32_t max, uint32_t* out) {
  uint64_t value;
  if (parse_u64(text, max, &value) != 0) return -1;
  *out = (uint32_t)value;
  return 0;
}

// Parses all of `text` as a finite number of at least 0, starting with a digit or a
// point (no sign, no spaces). 0, or -1 if it is not one.
static inline int parse_nonnegative(const char* text, double* out) {
  if ((*text < '0' || *text > '9') && *text != '.') return -1;
  char* end;
  double value = strtod(text, &end);
  if (end == text || *end != '\0' || !isfinite(value) || !(value >= 0)) return -1;
  *out = value;
  return 0;
}

// A number from a program's command line, or "<program>: bad <what> '<text>'" on
// stderr and exit status 2: what a usage error exits with.
static inline uint64_t arg_u64(const char* program, const char* what, const char* text, uint64_t max) {
  uint64_t value;
  if (parse_u64(text, max, &value) != 0) {
    fprintf(stderr, "%s: bad %s '%s' (a number from 0 to %llu)\n", program, what, text, (unsigned long long)max);
    exit(2);
  }
  return value;
}

static inline double arg_nonnegative(const char* program, const char* what, const char* text) {
  double value;
  if (parse_nonnegative(text, &value) != 0) {
    fprintf(stderr, "%s: bad %s '%s' (a number of at least 0)\n", program, what, text);
    exit(2);
  }
  return value;
}

#endif  // FFMTRACE_UTIL_H_
