// heapprofd's wire records and client configuration, as Perfetto's client and service lay
// them out (byte-level facts in the shared spec, heapprofd-wire.md): the C side of
// heapprofd-client's golden tests. The static asserts pin every offset the Java
// descriptor (HeapprofdWireDescriptor) names.
#ifndef FFMTRACE_HEAPPROFD_WIRE_H_
#define FFMTRACE_HEAPPROFD_WIRE_H_

#include <stddef.h>
#include <stdint.h>

enum {
  HPD_RECORD_FREE = 0,
  HPD_RECORD_MALLOC = 1,
  HPD_RECORD_HEAP_NAME = 2,
  HPD_MAX_REGISTER_DATA_SIZE = 272,
  HPD_HEAP_NAME_SIZE = 64,
  HPD_MAX_HEAPS = 64,
};

// ffmtrace's exit handshake on the socket (ControlBytes in Java): the client sends
// HPD_EXITING as it exits, the service reads the process's maps and answers HPD_EXIT_READ.
enum { HPD_EXITING = 'E', HPD_EXIT_READ = 'R' };

typedef struct {
  uint64_t sequence_number;
  uint64_t alloc_size;
  uint64_t sample_size;
  uint64_t alloc_address;
  uint64_t stack_pointer;
  uint64_t clock_monotonic_coarse_timestamp;
  uint8_t register_data[HPD_MAX_REGISTER_DATA_SIZE];
  uint32_t heap_id;
  uint8_t arch;
} __attribute__((aligned(8))) hpd_alloc_metadata;

typedef struct {
  uint64_t sequence_number;
  uint64_t addr;
  uint32_t heap_id;
} hpd_free_entry;

typedef struct {
  uint64_t sample_interval;
  uint32_t heap_id;
  char heap_name[HPD_HEAP_NAME_SIZE];
} hpd_heap_name;

typedef struct {
  char name[HPD_HEAP_NAME_SIZE];
  uint64_t interval;
} hpd_client_configuration_heap;

typedef struct {
  uint64_t default_interval;
  uint64_t block_client_timeout_us;
  uint64_t num_heaps;
  uint64_t adaptive_sampling_shmem_threshold;
  uint64_t adaptive_sampling_max_sampling_interval_bytes;
  hpd_client_configuration_heap heaps[HPD_MAX_HEAPS];
  uint8_t block_client;
  uint8_t disable_fork_teardown;
  uint8_t disable_vfork_detection;
  uint8_t all_heaps;
} hpd_client_configuration;

_Static_assert(sizeof(hpd_alloc_metadata) == 328, "AllocMetadata");
_Static_assert(offsetof(hpd_alloc_metadata, register_data) == 48, "register_data");
_Static_assert(offsetof(hpd_alloc_metadata, heap_id) == 320, "heap_id");
_Static_assert(offsetof(hpd_alloc_metadata, arch) == 324, "arch");
_Static_assert(sizeof(hpd_free_entry) == 24, "FreeEntry");
_Static_assert(sizeof(hpd_heap_name) == 80, "HeapName");
_Static_assert(offsetof(hpd_heap_name, heap_name) == 12, "heap_name");
_Static_assert(sizeof(hpd_client_configuration_heap) == 72, "ClientConfigurationHeap");
_Static_assert(offsetof(hpd_client_configuration, heaps) == 40, "heaps");
_Static_assert(offsetof(hpd_client_configuration, block_client) == 4648, "block_client");
_Static_assert(offsetof(hpd_client_configuration, all_heaps) == 4651, "all_heaps");
_Static_assert(sizeof(hpd_client_configuration) == 4656, "ClientConfiguration");

#endif  // FFMTRACE_HEAPPROFD_WIRE_H_
