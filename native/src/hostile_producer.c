// A hostile producer for the tracing service's validation tests: a process of its own
// that writes into its SMB packets only the service may write, or that do not parse,
// between valid ones.
//
//   hostile_producer <socket> <page_size> <smb_size> <writer_id> [forge|die]
//
// It connects to <socket> (a path, or @name for the abstract namespace), receives the
// SMB memfd and writes as writer <writer_id>, without commits (the service scans for
// complete chunks):
//   valid packet, timestamp 1000
//   for each forgery k = 1..N: the forgery (timestamp k), then a valid packet (1000 + k)
//   forgery 1 again (timestamp 1999), then a packet whose previous_packet_dropped says
//   the SMB was full (PRESENT | SMB_FULL, the one loss a producer may report; timestamp
//   2000), then a valid packet (2001)
// Valid packets hold a timestamp and an instant TrackEvent. Forgery "length raised" is
// written well-formed, then, before its chunk is released, the length of its last field
// is raised to cover the trusted fields the service appends after it. It prints
// "forgery <timestamp> <name>" for each forgery, releases its last chunk and exits 0.
//
// With "die" it writes valid packets 1000..1004 into one chunk, starts packet 1005 as a
// writer does (counted, its size not yet written, half its bytes) and kills itself with
// SIGKILL: a producer dead mid-write, its chunk left being written.
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c_trace_writer.h"
#include "ffmtrace_util.h"
#include "pb.h"
#include "perfetto_trace_fields.h"
#include "smb_abi.h"
#include "unix_peer.h"

#define PROGRAM "hostile_producer"

enum {
  LAYOUT = SMB_DIV4,
  PACKET_BYTES = 128,
  VALID_BASE = 1000,
  SMB_FULL_MARKER = 2000,
};

// How long a packet waits for the service to free a chunk.
static const long long WAIT_NS = 10000000000LL;

struct packet {
  uint8_t bytes[PACKET_BYTES];
  struct ctw_packet k;
};

// Starts a packet with its marker timestamp.
static void mark(struct packet* p, uint64_t timestamp) {
  ctw_packet_init(&p->k, p->bytes, sizeof(p->bytes));
  pb_varint(&p->k.pb, PACKET_TIMESTAMP, timestamp);
}

static const uint8_t INSTANT_EVENT[] = {TRACK_EVENT_TYPE << 3 | PB_VARINT, TRACK_EVENT_TYPE_INSTANT};

static void write_packet(struct ctw_writer* w, const struct packet* p) {
  if (p->k.pb.failed) {
    fprintf(stderr, "hostile_producer: packet buffer too small\n");
    exit(2);
  }
  if (ctw_write_packet(w, &p->k) != 0) {
    fprintf(stderr, "hostile_producer: no free chunk\n");
    exit(2);
  }
}

static void write_valid(struct ctw_writer* w, uint64_t timestamp) {
  struct packet p;
  mark(&p, timestamp);
  pb_bytes(&p.k.pb, PACKET_TRACK_EVENT, INSTANT_EVENT, sizeof(INSTANT_EVENT));
  write_packet(w, &p);
}

// A top-level field of a message holding one varint field.
static void put_message_with_varint(struct pb* p, uint32_t field, uint32_t inner_field, uint64_t value) {
  uint8_t bytes[2 * PB_MAX_VARINT];
  struct pb inner;
  pb_init(&inner, bytes, sizeof(bytes));
  pb_varint(&inner, inner_field, value);
  pb_bytes(p, field, bytes, pb_size(&inner));
}

// Builds forgery `k` after its marker; returns its name, or NULL past the last one.
static const char* forge(struct pb* p, int k) {
  static const uint8_t marker[16] = {0x82, 0x47, 0x7a, 0x76, 0xb2, 0x8d, 0x42, 0xba,
                                     0x81, 0xdc, 0x33, 0x32, 0x6d, 0x57, 0xa0, 0x79};
  // A varint cut short, and one an eleventh byte makes too long.
  static const uint8_t truncated[] = {0x80};
  static const uint8_t too_long[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
  switch (k) {
    case 1: pb_varint(p, PACKET_MACHINE_ID, 7); return "machine_id";
    case 2: put_message_with_varint(p, PACKET_TRACE_STATS, TRACE_STATS_INVALID_PACKETS, 0); return "trace_stats";
    case 3: pb_bytes(p, PACKET_COMPRESSED_PACKETS, marker, 4); return "compressed_packets";
    case 4: pb_varint(p, PACKET_TRUSTED_UID, 0); return "trusted_uid";
    case 5: pb_varint(p, PACKET_TRUSTED_PACKET_SEQUENCE_ID, 1); return "trusted_packet_sequence_id";
    case 6: pb_varint(p, PACKET_TRUSTED_PID, 1); return "trusted_pid";
    case 7: pb_bytes(p, PACKET_TRACE_CONFIG, NULL, 0); return "trace_config";
    case 8: pb_bytes(p, PACKET_SYNCHRONIZATION_MARKER, marker, sizeof(marker)); return "synchronization_marker";
    case 9:
      put_message_with_varint(p, PACKET_SERVICE_EVENT, SERVICE_EVENT_TRACING_STARTED, 1);
      return "service_event";
    case 10: pb_bytes(p, PACKET_TRACE_PROVENANCE, NULL, 0); return "trace_provenance";
    case 11: pb_bytes(p, PACKET_PROTOVMS, NULL, 0); return "protovms";
    case 12:
      pb_varint(p, PACKET_PREVIOUS_PACKET_DROPPED, LOSS_PRESENT | LOSS_OVERWRITE);
      return "previous_packet_dropped_with_a_service_cause";
    case 13: {
      const uint8_t loss = LOSS_PRESENT;
      pb_bytes(p, PACKET_PREVIOUS_PACKET_DROPPED, &loss, 1);
      return "previous_packet_dropped_not_a_varint";
    }
    case 14:
      pb_bytes(p, PACKET_TRACK_EVENT, INSTANT_EVENT, sizeof(INSTANT_EVENT));
      return "length_raised";
    case 15:
      pb_put_tag(p, PACKET_TIMESTAMP, PB_VARINT);
      pb_put_raw(p, truncated, sizeof(truncated));
      return "truncated_varint";
    case 16: pb_put_tag(p, PACKET_TIMESTAMP, PB_START_GROUP); return "group_wire_type";
    case 17:
      pb_put_tag(p, PACKET_TIMESTAMP, PB_VARINT);
      pb_put_raw(p, too_long, sizeof(too_long));
      return "varint_over_10_bytes";
    default: return NULL;
  }
}

// Starts packet `p` in the current chunk as a writer does, writes half of it and dies.
static void die_mid_packet(struct ctw_writer* w, const struct packet* p) {
  size_t size = pb_size(&p->k.pb);
  if (w->chunk == NULL || (size_t)(w->end - w->cursor) < SMB_PACKET_HEADER_SIZE + size) {
    fprintf(stderr, "hostile_producer: no room to die in\n");
    exit(2);
  }
  memset(w->cursor, 0, SMB_PACKET_HEADER_SIZE);
  smb_set_packets(w->chunk, (uint16_t)(smb_packets(w->chunk) + 1));
  memcpy(w->cursor + SMB_PACKET_HEADER_SIZE, p->bytes, size / 2);
  raise(SIGKILL);
}

int main(int argc, char** argv) {
  int die = argc == 6 && strcmp(argv[5], "die") == 0;
  if (argc != 5 && !(argc == 6 && (die || strcmp(argv[5], "forge") == 0))) {
    fprintf(stderr, "usage: hostile_producer <socket> <page_size> <smb_size> <writer_id> [forge|die]\n");
    return 2;
  }
  uint32_t page_size = (uint32_t)arg_u64(PROGRAM, "page size", argv[2], UINT32_MAX);
  size_t size = (size_t)arg_u64(PROGRAM, "SMB size", argv[3], SIZE_MAX);
  uint16_t writer_id = (uint16_t)arg_u64(PROGRAM, "writer id", argv[4], UINT16_MAX);
  int sock = peer_connect(argv[1]);
  struct smb smb;
  if (smb_init(&smb, peer_map_received(sock, size), size, page_size) != 0) {
    fprintf(stderr, "hostile_producer: invalid page size %u or SMB size %zu\n", page_size, size);
    return 2;
  }
  struct ctw_writer w;
  ctw_writer_init(&w, &smb, LAYOUT, writer_id, NULL, NULL, 0);
  w.wait_ns = WAIT_NS;

  if (die) {
    for (int k = 0; k < 5; k++) write_valid(&w, (uint64_t)(VALID_BASE + k));
    struct packet last;
    mark(&last, VALID_BASE + 5);
    pb_bytes(&last.k.pb, PACKET_TRACK_EVENT, INSTANT_EVENT, sizeof(INSTANT_EVENT));
    die_mid_packet(&w, &last);
  }
  write_valid(&w, VALID_BASE);
  for (int k = 1;; k++) {
    struct packet p;
    mark(&p, (uint64_t)k);
    const char* name = forge(&p.k.pb, k);
    if (name == NULL) break;
    if (strcmp(name, "length_raised") == 0) {
      // In a fresh chunk, so that the packet is one fragment, contiguous in the SMB.
      ctw_commit(&w, 0, 0);
      write_packet(&w, &p);
      size_t packet_size = pb_size(&p.k.pb);
      uint8_t* written = w.cursor - packet_size;
      // The last field is [tag][length 2][2 bytes]: its length now runs 20 bytes past the packet.
      written[packet_size - 1 - sizeof(INSTANT_EVENT)] = (uint8_t)(sizeof(INSTANT_EVENT) + 20);
    } else {
      write_packet(&w, &p);
    }
    printf("forgery %d %s\n", k, name);
    write_valid(&w, (uint64_t)(VALID_BASE + k));
  }
  struct packet again;
  mark(&again, SMB_FULL_MARKER - 1);
  printf("forgery %d %s\n", SMB_FULL_MARKER - 1, forge(&again.k.pb, 1));
  write_packet(&w, &again);
  struct packet smb_full;
  mark(&smb_full, SMB_FULL_MARKER);
  pb_varint(&smb_full.k.pb, PACKET_PREVIOUS_PACKET_DROPPED, LOSS_PRESENT | LOSS_SMB_FULL);
  write_packet(&w, &smb_full);
  write_valid(&w, SMB_FULL_MARKER + 1);
  ctw_commit(&w, 0, 0);
  fflush(stdout);
  return 0;
}
