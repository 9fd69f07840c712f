// heapprofd-client's golden tests: writes the sample records and client configuration
// the Java tests also encode, as hex lines, so that both sides are compared byte for
// byte; and decodes a configuration given as hex, so a Java encoding is checked by C.
//
//   heapprofd_wire_tool records        one line each: the Malloc, Free and HeapName records
//   heapprofd_wire_tool config         the sample ClientConfiguration
//   heapprofd_wire_tool read-config    reads hex on stdin, prints its fields
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heapprofd_wire.h"

enum { SAMPLE_STACK_BYTES = 40 };

static void print_hex(const void* data, size_t size) {
  const uint8_t* bytes = data;
  for (size_t i = 0; i < size; i++) {
    printf("%02x", bytes[i]);
  }
  printf("\n");
}

static void print_record(uint64_t type, const void* body, size_t body_size, const void* tail, size_t tail_size) {
  uint8_t record[8 + sizeof(hpd_alloc_metadata) + SAMPLE_STACK_BYTES];
  memcpy(record, &type, 8);
  memcpy(record + 8, body, body_size);
  if (tail_size > 0) {
    memcpy(record + 8 + body_size, tail, tail_size);
  }
  print_hex(record, 8 + body_size + tail_size);
}

static void records(void) {
  hpd_alloc_metadata malloc_record;
  memset(&malloc_record, 0, sizeof(malloc_record));
  malloc_record.sequence_number = 7;
  malloc_record.alloc_size = 1000;
  malloc_record.sample_size = 4096;
  malloc_record.alloc_address = 0x7f0000001000ULL;
  malloc_record.stack_pointer = 0x7ffd00000000ULL;
  malloc_record.clock_monotonic_coarse_timestamp = 123456789;
  for (int i = 0; i < HPD_MAX_REGISTER_DATA_SIZE; i++) {
    malloc_record.register_data[i] = (uint8_t)(i * 3);
  }
  malloc_record.heap_id = 2;
  malloc_record.arch = 4;
  uint8_t stack[SAMPLE_STACK_BYTES];
  for (int i = 0; i < SAMPLE_STACK_BYTES; i++) {
    stack[i] = (uint8_t)(i ^ 0x5a);
  }
  print_record(HPD_RECORD_MALLOC, &malloc_record, sizeof(malloc_record), stack, sizeof(stack));

  hpd_free_entry free_record;
  memset(&free_record, 0, sizeof(free_record));
  free_record.sequence_number = 8;
  free_record.addr = 0x7f0000001000ULL;
  free_record.heap_id = 2;
  print_record(HPD_RECORD_FREE, &free_record, sizeof(free_record), NULL, 0);

  hpd_heap_name heap_name;
  memset(&heap_name, 0, sizeof(heap_name));
  heap_name.sample_interval = 4096;
  heap_name.heap_id = 3;
  strcpy(heap_name.heap_name, "java.ffm");
  print_record(HPD_RECORD_HEAP_NAME, &heap_name, sizeof(heap_name), NULL, 0);
}

static void config(void) {
  hpd_client_configuration c;
  memset(&c, 0, sizeof(c));
  c.default_interval = 4096;
  c.block_client_timeout_us = 500;
  c.num_heaps = 2;
  c.adaptive_sampling_shmem_threshold = 1 << 20;
  c.adaptive_sampling_max_sampling_interval_bytes = 1 << 22;
  strcpy(c.heaps[0].name, "libc.malloc");
  c.heaps[0].interval = 4096;
  strcpy(c.heaps[1].name, "java.ffm");
  c.heaps[1].interval = 1024;
  c.block_client = 1;
  c.disable_vfork_detection = 1;
  print_hex(&c, sizeof(c));
}

static int read_config(void) {
  hpd_client_configuration c;
  uint8_t* bytes = (uint8_t*)&c;
  for (size_t i = 0; i < sizeof(c); i++) {
    unsigned value;
    if (scanf("%2x", &value) != 1) {
      fprintf(stderr, "short configuration: %zu bytes\n", i);
      return 1;
    }
    bytes[i] = (uint8_t)value;
  }
  printf("default_interval=%llu block_client_timeout_us=%llu num_heaps=%llu threshold=%llu max_interval=%llu\n",
         (unsigned long long)c.default_interval, (unsigned long long)c.block_client_timeout_us,
         (unsigned long long)c.num_heaps, (unsigned long long)c.adaptive_sampling_shmem_threshold,
         (unsigned long long)c.adaptive_sampling_max_sampling_interval_bytes);
  for (uint64_t i = 0; i < c.num_heaps && i < HPD_MAX_HEAPS; i++) {
    printf("heap %.*s=%llu\n", HPD_HEAP_NAME_SIZE, c.heaps[i].name, (unsigned long long)c.heaps[i].interval);
  }
  printf("block_client=%u disable_fork_teardown=%u disable_vfork_detection=%u all_heaps=%u\n", c.block_client,
         c.disable_fork_teardown, c.disable_vfork_detection, c.all_heaps);
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 2 && strcmp(argv[1], "records") == 0) {
    records();
    return 0;
  }
  if (argc == 2 && strcmp(argv[1], "config") == 0) {
    config();
    return 0;
  }
  if (argc == 2 && strcmp(argv[1], "read-config") == 0) {
    return read_config();
  }
  fprintf(stderr, "usage: %s records|config|read-config\n", argv[0]);
  return 2;
}
