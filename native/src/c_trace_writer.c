#define _GNU_SOURCE
#include "c_trace_writer.h"

#include "ffmtrace_util.h"
#include "perfetto_ipc.h"

#include <string.h>
#include <time.h>

enum {
  // Scans of the SMB before a writer that does not wait gives up: the service may be
  // changing a page's bitmap as it is read.
  SCANS_WITHOUT_WAITING = 4,
  STALL_SLEEP_NS = 100000,
};

// ---- packets ----

void ctw_packet_init(struct ctw_packet* k, uint8_t* buffer, size_t size) {
  pb_init(&k->pb, buffer, size);
  k->span_count = 0;
  k->depth = 0;
}

void ctw_nest_begin(struct ctw_packet* k, uint32_t field) {
  if (k->depth == CTW_MAX_DEPTH) {
    k->pb.failed = 1;
    return;
  }
  k->open[k->depth++] = pb_begin(&k->pb, field);
}

void ctw_nest_end(struct ctw_packet* k) {
  if (k->depth == 0) {
    k->pb.failed = 1;
    return;
  }
  uint8_t* size_field = k->open[--k->depth];
  if (size_field == NULL || k->pb.failed || k->span_count == CTW_MAX_SPANS) {
    k->pb.failed = 1;
    return;
  }
  pb_put_size(size_field, (uint32_t)(k->pb.at - size_field - PB_SIZE_FIELD));
  k->spans[k->span_count].size_at = (uint32_t)(size_field - k->pb.start);
  k->spans[k->span_count].end = (uint32_t)pb_size(&k->pb);
  k->span_count++;
}

// ---- chunks ----

void ctw_writer_init(struct ctw_writer* w, struct smb* smb, uint32_t layout, uint16_t writer_id, ctw_send_fn send,
                     void* context, uint32_t first_page) {
  memset(w, 0, offsetof(struct ctw_writer, patches));
  w->smb = smb;
  w->layout = layout;
  w->writer_id = writer_id;
  w->send = send;
  w->context = context;
  w->next_page = first_page;
  w->patch_count = 0;
}

uint32_t ctw_payload_size(const struct ctw_writer* w) {
  return smb_chunk_size(w->smb->page_size, w->layout) - SMB_CHUNK_HEADER_SIZE;
}

uint32_t ctw_free_chunks(const struct ctw_writer* w) {
  // Only the service frees chunks, so there are at least this many for as long as
  // this writer does not take any.
  uint32_t count = 0;
  uint32_t per_page = smb_chunks_per_layout(w->layout);
  for (uint32_t page = 0; page < w->smb->num_pages; page++) {
    uint32_t bitmap = smb_page_bitmap(w->smb, page);
    uint32_t layout = smb_layout_of(bitmap);
    if (layout == 0) {
      count += per_page;
      continue;
    }
    if (layout != w->layout) continue;
    for (uint32_t i = 0; i < per_page; i++) {
      if (smb_chunk_state_of(bitmap, i) == SMB_FREE) count++;
    }
  }
  return count;
}

// One scan of the SMB for a free chunk, from the page of the last one found. As Perfetto's
// arbiter (and SharedMemoryArbiter) does, it partitions a free page with the writer's
// layout and takes a free chunk of any page, whatever layout another writer gave it.
static uint8_t* try_acquire(struct ctw_writer* w, uint16_t packets, uint32_t* page_out, uint32_t* index_out) {
  uint32_t pages = w->smb->num_pages;
  for (uint32_t k = 0; k < pages; k++) {
    uint32_t page = (w->next_page + k) % pages;
    uint32_t bitmap = smb_page_bitmap(w->smb, page);
    if (bitmap == 0) {
      smb_try_partition_page(w->smb, page, w->layout);
      bitmap = smb_page_bitmap(w->smb, page);
    }
    for (uint32_t i = 0; i < smb_chunks_per_layout(smb_layout_of(bitmap)); i++) {
      if (smb_chunk_state_of(bitmap, i) != SMB_FREE) continue;
      uint8_t* c = smb_try_acquire_chunk_for_writing(w->smb, page, i, w->next_chunk_id, w->writer_id, packets);
      if (c != NULL) {
        w->next_page = page;
        *page_out = page;
        *index_out = i;
        return c;
      }
    }
  }
  return NULL;
}

// A free chunk, waiting for one as wait_ns says; NULL if none came.
static uint8_t* acquire(struct ctw_writer* w, uint16_t packets, uint32_t* page, uint32_t* index) {
  long long deadline = w->wait_ns > 0 ? clock_ns(CLOCK_MONOTONIC) + w->wait_ns : 0;
  for (int scan = 1;; scan++) {
    uint8_t* c = try_acquire(w, packets, page, index);
    if (c != NULL) return c;
    if (w->wait_ns == 0) {
      if (scan == SCANS_WITHOUT_WAITING) return NULL;
      continue;
    }
    if (w->cancel != NULL && atomic_load_explicit(w->cancel, memory_order_relaxed)) return NULL;
    if (w->wait_ns > 0 && clock_ns(CLOCK_MONOTONIC) >= deadline) return NULL;
    struct timespec pause = {0, STALL_SLEEP_NS};
    nanosleep(&pause, NULL);
  }
}

static void hold(struct ctw_writer* w, uint8_t* chunk, uint32_t page, uint32_t index) {
  w->chunk = chunk;
  w->page = page;
  w->chunk_index = index;
  w->chunk_id = w->next_chunk_id++;
  w->cursor = chunk + SMB_CHUNK_HEADER_SIZE;
  // The page's layout stays while this chunk is not free.
  w->end = chunk + smb_chunk_size(w->smb->page_size, smb_layout_of(smb_page_bitmap(w->smb, page)));
}

// ---- commits ----

void ctw_commit(struct ctw_writer* w, int flush, uint64_t flush_id) {
  struct pb request;
  pb_init(&request, w->commit_buffer, sizeof(w->commit_buffer));
  int any = flush;
  if (w->chunk != NULL) {
    smb_release_chunk_as_complete(w->smb, w->page, w->chunk_index);
    w->chunk = NULL;
    uint8_t* move = pb_begin(&request, COMMIT_CHUNKS_TO_MOVE);
    pb_varint(&request, MOVE_PAGE, w->page);
    pb_varint(&request, MOVE_CHUNK, w->chunk_index);
    pb_varint(&request, MOVE_TARGET_BUFFER, w->target_buffer);
    pb_end(&request, move);
    any = 1;
  }
  uint8_t* to_patch = NULL;
  uint32_t last_chunk_id = 0;
  int sent = 0;
  while (sent < w->patch_count && !w->patches[sent].pending) {
    const struct ctw_patch* patch = &w->patches[sent++];
    if (to_patch == NULL || patch->chunk_id != last_chunk_id) {
      if (to_patch != NULL) pb_end(&request, to_patch);
      to_patch = pb_begin(&request, COMMIT_CHUNKS_TO_PATCH);
      pb_varint(&request, PATCH_TARGET_BUFFER, w->target_buffer);
      pb_varint(&request, PATCH_WRITER_ID, w->writer_id);
      pb_varint(&request, PATCH_CHUNK_ID, patch->chunk_id);
      last_chunk_id = patch->chunk_id;
    }
    uint8_t* entry = pb_begin(&request, PATCH_PATCHES);
    pb_varint(&request, PATCH_OFFSET, patch->offset);
    pb_bytes(&request, PATCH_DATA, patch->data, sizeof(patch->data));
    pb_end(&request, entry);
  }
  if (to_patch != NULL) {
    // Patches of one chunk are contiguous: one left for this chunk means more will come.
    if (sent < w->patch_count && w->patches[sent].chunk_id == last_chunk_id) pb_varint(&request, PATCH_HAS_MORE, 1);
    pb_end(&request, to_patch);
    any = 1;
  }
  memmove(w->patches, w->patches + sent, (size_t)(w->patch_count - sent) * sizeof(struct ctw_patch));
  w->patch_count -= sent;
  if (flush) pb_varint(&request, COMMIT_FLUSH_REQUEST_ID, flush_id);
  if (any && w->send != NULL) w->send(w->context, &request, flush);
}

// Commits the patches that are done, keeping the chunk held.
static void commit_patches(struct ctw_writer* w) {
  uint8_t* held = w->chunk;
  w->chunk = NULL;
  ctw_commit(w, 0, 0);
  w->chunk = held;
}

// ---- writing ----

static void set_flags(uint8_t* chunk, uint32_t flags) {
  smb_set_packets(chunk, (uint16_t)(smb_packets(chunk) | (flags << SMB_FLAGS_SHIFT)));
}

// The packet offset before which the packet must leave the chunk at `pos` with `room`
// bytes: a size field is never split between chunks, as ProtoZero reserves it whole.
static size_t fitting(const struct ctw_packet* k, size_t pos, size_t room) {
  for (int i = 0; i < k->span_count; i++) {
    size_t at = k->spans[i].size_at;
    if (at >= pos && at < pos + room && at + PB_SIZE_FIELD > pos + room) room = at - pos;
  }
  return room;
}

// Leaves the current chunk in the middle of a packet, for a new one taken first (as
// Perfetto's writer does): the fragment's size, the size fields of submessages still
// open in it turned into patches, the chunk committed. With no new chunk, abandons the
// packet and returns -1.
static int next_fragment(struct ctw_writer* w, const struct ctw_packet* k, uint8_t** header, uint8_t** fragment,
                         size_t fragment_pos, size_t pos) {
  uint32_t page, index;
  uint8_t* next = acquire(w, (uint16_t)(1 | (SMB_FLAG_FIRST_CONTINUES << SMB_FLAGS_SHIFT)), &page, &index);
  if (next == NULL) {
    // The service drops a packet whose fragment has the drop-packet size, and this chunk
    // goes back without "continues". The packet's patches in earlier chunks still go,
    // so that no chunk waits for them; only this packet's are pending.
    pb_put_size(*header, CTW_PACKET_SIZE_DROP_PACKET);
    for (int i = 0; i < w->patch_count; i++) w->patches[i].pending = 0;
    ctw_commit(w, 0, 0);
    return -1;
  }
  pb_put_size(*header, (uint32_t)(w->cursor - *fragment));
  uint32_t flags = SMB_FLAG_LAST_CONTINUES;
  for (int i = 0; i < k->span_count; i++) {
    size_t at = k->spans[i].size_at;
    if (at < fragment_pos || at >= pos || k->spans[i].end <= pos) continue;
    // Without commits, or with the patch list full, the size stays in place: it is
    // already the right one.
    if (w->send == NULL || w->patch_count == CTW_MAX_PATCHES) continue;
    uint8_t* field = *fragment + (at - fragment_pos);
    struct ctw_patch* patch = &w->patches[w->patch_count++];
    patch->chunk_id = w->chunk_id;
    patch->offset = (uint32_t)(field - (w->chunk + SMB_CHUNK_HEADER_SIZE));
    memcpy(patch->data, field, sizeof(patch->data));
    patch->done_at = k->spans[i].end;
    patch->pending = 1;
    memset(field, 0, PB_SIZE_FIELD);
    flags |= SMB_FLAG_NEEDS_PATCHING;
  }
  set_flags(w->chunk, flags);
  ctw_commit(w, 0, 0);
  hold(w, next, page, index);
  *header = w->cursor;
  w->cursor += SMB_PACKET_HEADER_SIZE;
  *fragment = w->cursor;
  return 0;
}

int ctw_write_packet(struct ctw_writer* w, const struct ctw_packet* k) {
  if (k->pb.failed || k->depth != 0) return -1;
  size_t size = pb_size(&k->pb);
  // A packet starts where its size field and a byte fit, in a chunk that can count it.
  if (w->chunk != NULL && ((size_t)(w->end - w->cursor) < SMB_PACKET_HEADER_SIZE + 1 ||
                           smb_packet_count_of(smb_packets(w->chunk)) >= SMB_MAX_PACKET_COUNT - 1)) {
    // Given back before waiting for a new one: a writer that holds a full chunk while it
    // waits could starve the others of the last free ones.
    ctw_commit(w, 0, 0);
  }
  if (w->chunk == NULL) {
    uint32_t page, index;
    uint8_t* c = acquire(w, 0, &page, &index);
    if (c == NULL) return -1;
    hold(w, c, page, index);
  }
  uint8_t* header = w->cursor;
  w->cursor += SMB_PACKET_HEADER_SIZE;
  smb_set_packets(w->chunk, (uint16_t)(smb_packets(w->chunk) + 1));
  uint8_t* fragment = w->cursor;
  size_t fragment_pos = 0;
  size_t pos = 0;
  while (pos < size) {
    size_t room = fitting(k, pos, (size_t)(w->end - w->cursor));
    if (room == 0) {
      if (next_fragment(w, k, &header, &fragment, fragment_pos, pos) != 0) return -1;
      fragment_pos = pos;
      continue;
    }
    size_t n = size - pos < room ? size - pos : room;
    memcpy(w->cursor, k->pb.start + pos, n);
    w->cursor += n;
    pos += n;
    for (int i = 0; i < w->patch_count; i++) {
      if (w->patches[i].pending && w->patches[i].done_at <= pos) w->patches[i].pending = 0;
    }
  }
  size_t last = (size_t)(w->cursor - fragment);
  if (w->shrink_small_sizes && last < PB_MAX_ONE_BYTE_SIZE) {
    // A 1-byte size, the fragment moved back next to it.
    header[0] = (uint8_t)last;
    memmove(header + 1, fragment, last);
    w->cursor -= SMB_PACKET_HEADER_SIZE - 1;
  } else {
    pb_put_size(header, (uint32_t)last);
  }
  // The patches this packet completed go now rather than with the next chunk, so that a
  // producer killed between packets leaves no chunk waiting for patches in the service.
  if (w->patch_count > 0 && !w->patches[0].pending) commit_patches(w);
  return 0;
}
