// A C producer and scanner for an SMB shared with a JVM: the proof that the layout is
// shared, not just similar.
//
//   smb_tool produce <socket> <page_size> <smb_size> <writer_id> <packets> <seed>
//                    <max_packet_size> <layout> <shrink> [wrap]
//       receive the SMB memfd over <socket>, write <packets> packets generated from
//       <seed> (see below) as writer <writer_id>, fragmenting them over chunks, then
//       release the last chunk and send "D". With wrap 1, each packet's bytes go in a
//       TracePacket field 900 (Perfetto's for_testing), making it a packet the tracing
//       service's validation lets through.
//   smb_tool scan <socket> <page_size> <smb_size>
//       receive the SMB memfd and print every page and chunk, and the fragments of
//       complete chunks:
//         page <p> bitmap 0x<hex> layout <l>
//         chunk <p> <c> state <s> id <id> writer <w> count <n> flags <f>
//         fragment <p> <c> <i> <payload offset of the bytes> <size> <hex bytes>
//       then send "D".
//
// <socket> is a path, or @name for the abstract namespace. Packet k has a size drawn
// from xorshift32(seed) modulo (max_packet_size + 1) and bytes (k*131 + i*7 + seed).
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "unix_peer.h"

#include "c_trace_writer.h"
#include "ffmtrace_util.h"
#include "pb.h"
#include "perfetto_trace_fields.h"
#include "smb_abi.h"

static uint32_t xorshift32(uint32_t* state) {
  uint32_t x = *state;
  x ^= x << 13;
  x ^= x >> 17;
  x ^= x << 5;
  return *state = x;
}

// The most a for_testing field's tag and a 32-bit size take.
enum { WRAP_HEADER_MAX = 10 };

// How long a packet waits for the reader to free a chunk.
static const long long WAIT_NS = 10000000000LL;

#define PROGRAM "smb_tool"

static int produce(int sock, struct smb* smb, int wrap, char** argv) {
  uint16_t writer_id = (uint16_t)arg_u64(PROGRAM, "writer id", argv[0], UINT16_MAX);
  long packets = (long)arg_u64(PROGRAM, "packet count", argv[1], LONG_MAX);
  uint32_t seed = (uint32_t)arg_u64(PROGRAM, "seed", argv[2], UINT32_MAX);
  // The packet's buffer takes max_size + 1 bytes more than its wrapper.
  uint32_t max_size = (uint32_t)arg_u64(PROGRAM, "max packet size", argv[3], UINT32_MAX - WRAP_HEADER_MAX - 1);
  uint32_t layout = (uint32_t)arg_u64(PROGRAM, "layout", argv[4], SMB_DIV14);
  // Packets without commits: the reader scans the SMB for complete chunks.
  struct ctw_writer w;
  ctw_writer_init(&w, smb, layout, writer_id, NULL, NULL, 0);
  w.wait_ns = WAIT_NS;
  w.shrink_small_sizes = (int)arg_u64(PROGRAM, "shrink", argv[5], 1);
  size_t capacity = WRAP_HEADER_MAX + max_size + 1;
  uint8_t* packet = malloc(capacity);
  uint8_t* data = malloc(max_size + 1);
  if (packet == NULL || data == NULL) peer_die("malloc");
  uint32_t rng = seed == 0 ? 1 : seed;
  for (long k = 0; k < packets; k++) {
    uint32_t size = xorshift32(&rng) % (max_size + 1);
    struct ctw_packet p;
    ctw_packet_init(&p, packet, capacity);
    if (wrap) {
      pb_put_tag(&p.pb, PACKET_FOR_TESTING, PB_BYTES);
      pb_put_varint(&p.pb, size);
    }
    for (uint32_t i = 0; i < size; i++) data[i] = (uint8_t)(k * 131 + i * 7 + seed);
    pb_put_raw(&p.pb, data, size);
    if (ctw_write_packet(&w, &p) != 0) {
      fprintf(stderr, "smb_tool: no free chunk for packet %ld\n", k);
      return 2;
    }
  }
  ctw_commit(&w, 0, 0);
  free(data);
  free(packet);
  if (send(sock, "D", 1, MSG_NOSIGNAL) != 1) peer_die("send");
  return 0;
}

// Fragments of a complete chunk; stops at the first size that does not fit.
static void print_fragments(const uint8_t* chunk, uint32_t chunk_size, uint32_t page, uint32_t index, uint32_t count) {
  uint32_t pos = SMB_CHUNK_HEADER_SIZE;
  for (uint32_t i = 0; i < count && pos < chunk_size; i++) {
    // A fragment's size is a varint of at most SMB_PACKET_HEADER_SIZE bytes.
    struct pb_reader r;
    uint32_t left = chunk_size - pos;
    pb_reader_init(&r, chunk + pos, left < SMB_PACKET_HEADER_SIZE ? left : SMB_PACKET_HEADER_SIZE);
    uint64_t size;
    if (pb_read_varint(&r, &size) != 0) {
      printf("bad-fragment %u %u %u unterminated-size\n", page, index, i);
      return;
    }
    pos += (uint32_t)(r.at - (chunk + pos));
    if (size > chunk_size - pos) {
      printf("bad-fragment %u %u %u %llu\n", page, index, i, (unsigned long long)size);
      return;
    }
    printf("fragment %u %u %u %u %u ", page, index, i, pos - SMB_CHUNK_HEADER_SIZE, (uint32_t)size);
    for (uint32_t j = 0; j < (uint32_t)size; j++) printf("%02x", chunk[pos + j]);
    printf("\n");
    pos += (uint32_t)size;
  }
}

static int scan(int sock, struct smb* smb) {
  for (uint32_t page = 0; page < smb->num_pages; page++) {
    uint32_t bitmap = smb_page_bitmap(smb, page);
    uint32_t layout = smb_layout_of(bitmap);
    printf("page %u bitmap 0x%08x layout %u\n", page, bitmap, layout);
    uint32_t chunk_size = smb_chunk_size(smb->page_size, layout);
    for (uint32_t c = 0; c < smb_chunks_per_layout(layout); c++) {
      const uint8_t* chunk = smb_chunk(smb, page, c, layout);
      uint32_t state = smb_chunk_state_of(bitmap, c);
      uint16_t packets = smb_packets(chunk);
      printf("chunk %u %u state %u id %u writer %u count %u flags %u\n", page, c, state, smb_chunk_id(chunk),
             smb_writer_id(chunk), smb_packet_count_of(packets), smb_flags_of(packets));
      if (state == SMB_COMPLETE) print_fragments(chunk, chunk_size, page, c, smb_packet_count_of(packets));
    }
  }
  fflush(stdout);
  if (send(sock, "D", 1, MSG_NOSIGNAL) != 1) peer_die("send");
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: smb_tool produce|scan <socket> <page_size> <smb_size> ...\n");
    return 2;
  }
  int sock = peer_connect(argv[2]);
  uint32_t page_size = (uint32_t)arg_u64(PROGRAM, "page size", argv[3], UINT32_MAX);
  size_t size = (size_t)arg_u64(PROGRAM, "SMB size", argv[4], SIZE_MAX);
  struct smb smb;
  if (smb_init(&smb, peer_map_received(sock, size), size, page_size) != 0) {
    fprintf(stderr, "smb_tool: invalid page size %u or SMB size %zu\n", page_size, size);
    return 2;
  }
  if (strcmp(argv[1], "produce") == 0 && (argc == 11 || argc == 12)) {
    return produce(sock, &smb, argc == 12 && arg_u64(PROGRAM, "wrap", argv[11], 1) != 0, argv + 5);
  }
  if (strcmp(argv[1], "scan") == 0 && argc == 5) return scan(sock, &smb);
  fprintf(stderr, "smb_tool: bad arguments\n");
  return 2;
}
