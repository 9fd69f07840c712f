#include "smb_abi.h"

#include <stdatomic.h>

enum { MAX_ATTEMPTS = 64 };

static const uint32_t kChunksPerLayout[8] = {0, 1, 2, 4, 7, 14, 0, 0};

static _Atomic uint32_t* bitmap_of(const struct smb* smb, uint32_t page) {
  return (_Atomic uint32_t*)(smb->base + (size_t)page * smb->page_size);
}

int smb_init(struct smb* smb, void* base, size_t size, uint32_t page_size) {
  if (page_size < 4096 || page_size > 65536 || page_size % 4096 != 0) return -1;
  if (size == 0 || size % page_size != 0 || ((uintptr_t)base & 4095) != 0) return -1;
  smb->base = base;
  smb->size = size;
  smb->page_size = page_size;
  smb->num_pages = (uint32_t)(size / page_size);
  return 0;
}

uint32_t smb_chunks_per_layout(uint32_t layout) { return kChunksPerLayout[layout & 7]; }

uint32_t smb_chunk_size(uint32_t page_size, uint32_t layout) {
  uint32_t n = smb_chunks_per_layout(layout);
  return n == 0 ? 0 : ((page_size - SMB_PAGE_HEADER_SIZE) / n) & ~3u;
}

uint32_t smb_page_bitmap(const struct smb* smb, uint32_t page) {
  return atomic_load_explicit(bitmap_of(smb, page), memory_order_acquire);
}

uint8_t* smb_chunk(const struct smb* smb, uint32_t page, uint32_t chunk, uint32_t layout) {
  return smb->base + (size_t)page * smb->page_size + SMB_PAGE_HEADER_SIZE +
         (size_t)chunk * smb_chunk_size(smb->page_size, layout);
}

int smb_try_partition_page(struct smb* smb, uint32_t page, uint32_t layout) {
  uint32_t expected = 0;
  return atomic_compare_exchange_strong_explicit(bitmap_of(smb, page), &expected,
                                                 layout << SMB_LAYOUT_SHIFT, memory_order_acq_rel,
                                                 memory_order_acquire);
}

// Moves chunk `chunk` of `page` from state `from` to `to`; returns the layout, or 0.
static uint32_t transition(struct smb* smb, uint32_t page, uint32_t chunk, uint32_t from, uint32_t to) {
  if (page >= smb->num_pages) return 0;
  _Atomic uint32_t* word = bitmap_of(smb, page);
  uint32_t bitmap = atomic_load_explicit(word, memory_order_acquire);
  uint32_t layout = smb_layout_of(bitmap);
  uint32_t shift = chunk * SMB_CHUNK_STATE_BITS;
  for (int attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    if (smb_layout_of(bitmap) != layout || chunk >= smb_chunks_per_layout(layout) ||
        smb_chunk_state_of(bitmap, chunk) != from) {
      return 0;
    }
    uint32_t updated = (bitmap & ~((uint32_t)SMB_CHUNK_STATE_MASK << shift)) | (to << shift);
    if (to == SMB_FREE && (updated & SMB_ALL_CHUNKS_MASK) == 0) updated = 0;
    if (atomic_compare_exchange_strong_explicit(word, &bitmap, updated, memory_order_acq_rel,
                                                memory_order_acquire)) {
      return layout;
    }
  }
  return 0;
}

uint8_t* smb_try_acquire_chunk_for_writing(struct smb* smb, uint32_t page, uint32_t chunk,
                                           uint32_t chunk_id, uint16_t writer_id, uint16_t packets) {
  uint32_t layout = transition(smb, page, chunk, SMB_FREE, SMB_BEING_WRITTEN);
  if (layout == 0) return NULL;
  uint8_t* c = smb_chunk(smb, page, chunk, layout);
  atomic_store_explicit((_Atomic uint32_t*)c, chunk_id, memory_order_relaxed);
  atomic_store_explicit((_Atomic uint16_t*)(c + 4), writer_id, memory_order_relaxed);
  atomic_store_explicit((_Atomic uint16_t*)(c + 6), packets, memory_order_release);
  return c;
}

int smb_release_chunk_as_complete(struct smb* smb, uint32_t page, uint32_t chunk) {
  return transition(smb, page, chunk, SMB_BEING_WRITTEN, SMB_COMPLETE) != 0;
}

uint32_t smb_chunk_id(const uint8_t* chunk) {
  return atomic_load_explicit((_Atomic uint32_t*)chunk, memory_order_relaxed);
}

uint16_t smb_writer_id(const uint8_t* chunk) {
  return atomic_load_explicit((_Atomic uint16_t*)(chunk + 4), memory_order_relaxed);
}

uint16_t smb_packets(const uint8_t* chunk) {
  return atomic_load_explicit((_Atomic uint16_t*)(chunk + 6), memory_order_acquire);
}

void smb_set_packets(uint8_t* chunk, uint16_t packets) {
  atomic_store_explicit((_Atomic uint16_t*)(chunk + 6), packets, memory_order_release);
}
