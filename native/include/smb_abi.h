// Perfetto's producer/service shared memory buffer (SMB) ABI, from C.
//
// The same bytes and memory orders as dev.ffmtrace.tracing.smb.SharedMemoryAbi (whose
// Javadoc draws the layout): pages with an 8-byte header holding an atomic bitmap of
// 2-bit chunk states and a 3-bit layout; chunks with an 8-byte header (chunk id,
// writer id, packets word of 10-bit count and 3 flags); packets as [size varint][bytes].
// The one writer over it is c_trace_writer.h.
#ifndef FFMTRACE_SMB_ABI_H_
#define FFMTRACE_SMB_ABI_H_

#include <stddef.h>
#include <stdint.h>

enum {
  SMB_PAGE_HEADER_SIZE = 8,
  SMB_CHUNK_HEADER_SIZE = 8,
  SMB_PACKET_HEADER_SIZE = 4,
  SMB_MAX_PACKET_COUNT = 1023,
  SMB_CHUNK_STATE_BITS = 2,
  SMB_CHUNK_STATE_MASK = 3,
  SMB_LAYOUT_SHIFT = 28,
  SMB_LAYOUT_MASK = 0x70000000,
  SMB_ALL_CHUNKS_MASK = 0x0FFFFFFF,
  SMB_PACKET_COUNT_MASK = 0x3FF,
  SMB_FLAGS_SHIFT = 10,
  SMB_FLAGS_MASK = 7,
  SMB_FLAG_FIRST_CONTINUES = 1,
  SMB_FLAG_LAST_CONTINUES = 2,
  SMB_FLAG_NEEDS_PATCHING = 4,
};

enum smb_chunk_state { SMB_FREE = 0, SMB_BEING_WRITTEN = 1, SMB_BEING_READ = 2, SMB_COMPLETE = 3 };
enum smb_layout { SMB_NOT_PARTITIONED = 0, SMB_DIV1, SMB_DIV2, SMB_DIV4, SMB_DIV7, SMB_DIV14 };

// The fields of a page's bitmap and of a chunk's packets word.
static inline uint32_t smb_layout_of(uint32_t bitmap) { return (bitmap & SMB_LAYOUT_MASK) >> SMB_LAYOUT_SHIFT; }
static inline uint32_t smb_chunk_state_of(uint32_t bitmap, uint32_t chunk) {
  return (bitmap >> (chunk * SMB_CHUNK_STATE_BITS)) & SMB_CHUNK_STATE_MASK;
}
static inline uint32_t smb_packet_count_of(uint16_t packets) { return packets & SMB_PACKET_COUNT_MASK; }
static inline uint32_t smb_flags_of(uint16_t packets) { return (packets >> SMB_FLAGS_SHIFT) & SMB_FLAGS_MASK; }

struct smb {
  uint8_t* base;
  size_t size;
  uint32_t page_size;
  uint32_t num_pages;
};

// Returns 0, or -1 if page_size or size are not what Perfetto accepts.
int smb_init(struct smb* smb, void* base, size_t size, uint32_t page_size);

uint32_t smb_chunks_per_layout(uint32_t layout);
uint32_t smb_chunk_size(uint32_t page_size, uint32_t layout);
uint32_t smb_page_bitmap(const struct smb* smb, uint32_t page);  // acquire
uint8_t* smb_chunk(const struct smb* smb, uint32_t page, uint32_t chunk, uint32_t layout);

int smb_try_partition_page(struct smb* smb, uint32_t page, uint32_t layout);
// Free -> BeingWritten, then the header. Returns the chunk or NULL.
uint8_t* smb_try_acquire_chunk_for_writing(struct smb* smb, uint32_t page, uint32_t chunk,
                                           uint32_t chunk_id, uint16_t writer_id, uint16_t packets);
int smb_release_chunk_as_complete(struct smb* smb, uint32_t page, uint32_t chunk);

uint32_t smb_chunk_id(const uint8_t* chunk);
uint16_t smb_writer_id(const uint8_t* chunk);
uint16_t smb_packets(const uint8_t* chunk);  // acquire
void smb_set_packets(uint8_t* chunk, uint16_t packets);  // release

#endif  // FFMTRACE_SMB_ABI_H_
