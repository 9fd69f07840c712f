// The SMB writer of every C program here (c_producer.c, stress_producer.c, smb_tool.c,
// hostile_producer.c): packets written into a Perfetto SMB as Perfetto's TraceWriter
// writes them, and the CommitData requests that hand the chunks and patches to the service.
//
// A packet is encoded first (struct ctw_packet: protobuf bytes whose submessages have
// 4-byte size fields, with where each one is), then copied into chunks. A packet that
// does not fit in its chunk goes on in the next one; the size fields of submessages
// still open in the chunk it leaves are zeroed there (the chunk flagged as needing
// patches) and sent later as CommitData patches, with has_more_patches while another is
// pending for that chunk. Each chunk the writer completes is committed at once
// (chunks_to_move), and patches once the packet that needed them is written.
//
// A writer without a send function commits nothing: the service finds its complete
// chunks by scanning the SMB, and its packets keep their size fields in place.
//
// A writer belongs to one thread; writers of other threads share the SMB through its
// atomic chunk states only. The commits go through the caller's send function, which
// serializes them on the socket.
#ifndef FFMTRACE_C_TRACE_WRITER_H_
#define FFMTRACE_C_TRACE_WRITER_H_

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "pb.h"
#include "smb_abi.h"

enum {
  CTW_MAX_SPANS = 32,
  CTW_MAX_DEPTH = 8,
  // Size fields awaiting a patch: a packet leaves at most CTW_MAX_DEPTH in each chunk it
  // crosses, and every commit sends those that are done.
  CTW_MAX_PATCHES = 256,
  // Room for a chunk to move and CTW_MAX_PATCHES patches, each in its own chunk.
  CTW_COMMIT_BUFFER = 16384,
  // Perfetto's kPacketSizeDropPacket: the size of a fragment whose packet was abandoned.
  CTW_PACKET_SIZE_DROP_PACKET = 0x0FFFFFFF,
};

// A packet encoded before it is written, with where its submessages' size fields are.
struct ctw_packet {
  struct pb pb;
  struct {
    uint32_t size_at;  // offset of the size field in the packet
    uint32_t end;      // offset just past the submessage
  } spans[CTW_MAX_SPANS];
  int span_count;
  uint8_t* open[CTW_MAX_DEPTH];
  int depth;
};

void ctw_packet_init(struct ctw_packet* k, uint8_t* buffer, size_t size);
void ctw_nest_begin(struct ctw_packet* k, uint32_t field);
// Unlike pb_end, keeps the 4-byte size field: whether the submessage ends in the chunk it
// starts in is known only once the packet is copied into the SMB.
void ctw_nest_end(struct ctw_packet* k);

struct ctw_patch {
  uint32_t chunk_id;
  uint32_t offset;  // from the start of the chunk's payload
  uint8_t data[PB_SIZE_FIELD];
  uint32_t done_at;  // the packet offset past which the submessage is complete
  int pending;
};

// Sends a CommitData request; `flush` says that it acknowledges a flush and wants a reply.
typedef void (*ctw_send_fn)(void* context, const struct pb* request, int flush);

struct ctw_writer {
  struct smb* smb;
  uint32_t layout;
  uint16_t writer_id;
  uint32_t target_buffer;
  ctw_send_fn send;  // NULL: no commits
  void* context;
  // How long a packet waits for a free chunk: 0 not at all, <0 until *cancel is set.
  long long wait_ns;
  const atomic_int* cancel;  // may be NULL
  // Writes a packet's last fragment under PB_MAX_ONE_BYTE_SIZE bytes with a 1-byte size,
  // as smb_tool's tests ask.
  int shrink_small_sizes;
  // The chunk held, if any.
  uint8_t* chunk;
  uint32_t page, chunk_index, chunk_id, next_chunk_id;
  uint32_t next_page;  // where the search for a free chunk starts
  uint8_t* cursor;
  uint8_t* end;
  struct ctw_patch patches[CTW_MAX_PATCHES];
  int patch_count;
  uint8_t commit_buffer[CTW_COMMIT_BUFFER];
};

// The writer starts its search for free chunks at page `first_page`, so that writers of
// different threads do not all contend for the same ones.
void ctw_writer_init(struct ctw_writer* w, struct smb* smb, uint32_t layout, uint16_t writer_id, ctw_send_fn send,
                     void* context, uint32_t first_page);

// Writes a packet; 0, or -1 if it was dropped for want of a chunk: either none was free
// for its start (nothing written), or none for a later fragment (the packet abandoned
// with the drop-packet size, as Perfetto's TraceWriter does).
int ctw_write_packet(struct ctw_writer* w, const struct ctw_packet* k);

// Releases the chunk held, if any, and commits it with the patches that are done; with
// `flush`, also acknowledges flush `flush_id` (sent even when there is nothing else).
void ctw_commit(struct ctw_writer* w, int flush, uint64_t flush_id);

// Bytes of packets a chunk of the writer's layout holds.
uint32_t ctw_payload_size(const struct ctw_writer* w);

// Free chunks of the writer's layout in the SMB, counting those of unpartitioned pages.
uint32_t ctw_free_chunks(const struct ctw_writer* w);

#endif  // FFMTRACE_C_TRACE_WRITER_H_
