// The C producer of `ffmtrace record --c-producer`: a process of its own that writes
// TrackEvent packets into the SMB of its producer in the JVM's tracing service.
//
//   ffmtrace-c-producer <socket> <page_size> <smb_size> <writer_id>
//
// It connects to <socket> (a path, or @name for the abstract namespace), receives the
// SMB memfd, and writes as writer <writer_id> on a sequence of its own: descriptors of
// its process and thread tracks and of a counter track, then, every millisecond, a
// "c work" slice holding a "c step" slice and a "c tick" instant, and the step's length
// on the counter track. Timestamps are absolute CLOCK_BOOTTIME, the default trace clock.
// It sends no commits: the service finds the complete chunks by scanning the SMB.
//
// Each iteration's packets are written all or nothing into one chunk, so a full SMB
// drops whole iterations (counted) and never leaves a slice open or a packet cut short.
// Any byte from the service, or the socket closing, stops it: it releases its last chunk
// as complete, sends "D <packets written> <iterations dropped>\n" and exits 0.
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "smb_abi.h"
#include "unix_peer.h"

enum {
  BATCH_BYTES = 512,
  BATCH_PACKETS = 8,
  LAYOUT = SMB_DIV4,
  // How long a batch waits for a free chunk before it is dropped: the service frees
  // chunks at every flush, so a longer wait would only delay the stop.
  CHUNK_WAIT_MS = 5,
};

static const long long DESCRIBE_PERIOD_NS = 1000000000LL;

// TracePacket, TrackEvent and TrackDescriptor field numbers (Perfetto's trace protos).
enum {
  PACKET_TIMESTAMP = 8,
  PACKET_TRACK_EVENT = 11,
  PACKET_SEQUENCE_FLAGS = 13,
  PACKET_TRACK_DESCRIPTOR = 60,
  PACKET_FIRST_PACKET_ON_SEQUENCE = 87,
  SEQ_INCREMENTAL_STATE_CLEARED = 1,
  EVENT_TYPE = 9,
  EVENT_TRACK_UUID = 11,
  EVENT_CATEGORIES = 22,
  EVENT_NAME = 23,
  EVENT_COUNTER_VALUE = 30,
  TYPE_SLICE_BEGIN = 1,
  TYPE_SLICE_END = 2,
  TYPE_INSTANT = 3,
  TYPE_COUNTER = 4,
  TRACK_UUID = 1,
  TRACK_NAME = 2,
  TRACK_PROCESS = 3,
  TRACK_THREAD = 4,
  TRACK_PARENT_UUID = 5,
  TRACK_COUNTER = 8,
  PROCESS_PID = 1,
  PROCESS_NAME = 6,
  THREAD_PID = 1,
  THREAD_TID = 2,
  THREAD_NAME = 5,
  COUNTER_UNIT = 3,
  UNIT_TIME_NS = 1,
};

// A protobuf message being encoded into a fixed buffer; overflowing marks it failed.
struct pb {
  uint8_t* start;
  uint8_t* at;
  uint8_t* end;
  int failed;
};

static void pb_init(struct pb* m, uint8_t* buffer, size_t size) {
  m->start = m->at = buffer;
  m->end = buffer + size;
  m->failed = 0;
}

static size_t pb_size(const struct pb* m) { return (size_t)(m->at - m->start); }

static void pb_raw_varint(struct pb* m, uint64_t value) {
  do {
    if (m->at == m->end) {
      m->failed = 1;
      return;
    }
    uint8_t byte = value & 0x7f;
    value >>= 7;
    *m->at++ = value != 0 ? (uint8_t)(byte | 0x80) : byte;
  } while (value != 0);
}

static void pb_varint(struct pb* m, uint32_t field, uint64_t value) {
  pb_raw_varint(m, (uint64_t)field << 3);
  pb_raw_varint(m, value);
}

static void pb_bytes(struct pb* m, uint32_t field, const void* data, size_t size) {
  pb_raw_varint(m, ((uint64_t)field << 3) | 2);
  pb_raw_varint(m, size);
  if (m->failed || (size_t)(m->end - m->at) < size) {
    m->failed = 1;
    return;
  }
  memcpy(m->at, data, size);
  m->at += size;
}

static void pb_string(struct pb* m, uint32_t field, const char* s) { pb_bytes(m, field, s, strlen(s)); }

static void pb_message(struct pb* m, uint32_t field, const struct pb* inner) {
  if (inner->failed) m->failed = 1;
  pb_bytes(m, field, inner->start, pb_size(inner));
}

// Packets encoded back to back, written to the SMB together.
struct batch {
  uint8_t bytes[BATCH_BYTES];
  size_t used;
  size_t sizes[BATCH_PACKETS];
  int count;
  int failed;
};

static void batch_add(struct batch* b, const struct pb* packet) {
  size_t size = pb_size(packet);
  if (packet->failed || b->count == BATCH_PACKETS || BATCH_BYTES - b->used < size) {
    b->failed = 1;
    return;
  }
  memcpy(b->bytes + b->used, packet->start, size);
  b->used += size;
  b->sizes[b->count++] = size;
}

struct producer {
  struct smb smb;
  struct smb_writer writer;
  int first_packet_written;
  uint64_t process_uuid, thread_uuid, counter_uuid;
  int pid, tid;
  long long last_described;
  long packets;
  long dropped;
};

static long long boottime_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_BOOTTIME, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static uint64_t splitmix64(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Writes a batch's packets into the current chunk, or none of them: if they do not all
// fit in it, the chunk is released first and the batch goes into a fresh one, whose
// acquisition is the only step that can fail.
static int write_batch(struct producer* p, const struct batch* b) {
  struct smb_writer* w = &p->writer;
  size_t needed = b->used + (size_t)b->count * SMB_PACKET_HEADER_SIZE;
  if (b->failed || needed > smb_chunk_size(p->smb.page_size, LAYOUT) - SMB_CHUNK_HEADER_SIZE) return -1;
  if (w->chunk != NULL && ((size_t)(w->end - w->cursor) < needed ||
                           smb_packet_count_of(smb_packets(w->chunk)) + b->count >= SMB_MAX_PACKET_COUNT - 1)) {
    smb_writer_flush(w);
  }
  size_t at = 0;
  for (int i = 0; i < b->count; i++) {
    if (smb_writer_write_packet(w, b->bytes + at, b->sizes[i]) != 0) return -1;
    at += b->sizes[i];
  }
  p->packets += b->count;
  return 0;
}

static void add_descriptor(struct batch* b, struct producer* p, const struct pb* descriptor) {
  uint8_t buffer[256];
  struct pb packet;
  pb_init(&packet, buffer, sizeof(buffer));
  if (!p->first_packet_written && b->count == 0) {
    pb_varint(&packet, PACKET_SEQUENCE_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
    pb_varint(&packet, PACKET_FIRST_PACKET_ON_SEQUENCE, 1);
  }
  pb_message(&packet, PACKET_TRACK_DESCRIPTOR, descriptor);
  batch_add(b, &packet);
}

// The three track descriptors, restated every second so that a ring buffer that wrapped
// still describes the tracks.
static int describe(struct producer* p) {
  struct batch b = {0};
  uint8_t track_buffer[256], inner_buffer[128];
  struct pb track, inner;

  pb_init(&inner, inner_buffer, sizeof(inner_buffer));
  pb_varint(&inner, PROCESS_PID, (uint64_t)p->pid);
  pb_string(&inner, PROCESS_NAME, "ffmtrace c producer");
  pb_init(&track, track_buffer, sizeof(track_buffer));
  pb_varint(&track, TRACK_UUID, p->process_uuid);
  pb_message(&track, TRACK_PROCESS, &inner);
  add_descriptor(&b, p, &track);

  pb_init(&inner, inner_buffer, sizeof(inner_buffer));
  pb_varint(&inner, THREAD_PID, (uint64_t)p->pid);
  pb_varint(&inner, THREAD_TID, (uint64_t)p->tid);
  pb_string(&inner, THREAD_NAME, "c producer main");
  pb_init(&track, track_buffer, sizeof(track_buffer));
  pb_varint(&track, TRACK_UUID, p->thread_uuid);
  pb_varint(&track, TRACK_PARENT_UUID, p->process_uuid);
  pb_message(&track, TRACK_THREAD, &inner);
  add_descriptor(&b, p, &track);

  pb_init(&inner, inner_buffer, sizeof(inner_buffer));
  pb_varint(&inner, COUNTER_UNIT, UNIT_TIME_NS);
  pb_init(&track, track_buffer, sizeof(track_buffer));
  pb_varint(&track, TRACK_UUID, p->counter_uuid);
  pb_varint(&track, TRACK_PARENT_UUID, p->process_uuid);
  pb_string(&track, TRACK_NAME, "c step length");
  pb_message(&track, TRACK_COUNTER, &inner);
  add_descriptor(&b, p, &track);

  if (write_batch(p, &b) != 0) return -1;
  p->first_packet_written = 1;
  return 0;
}

// A TrackEvent packet; name may be NULL (a slice end, a counter value).
static void add_event(struct batch* b, long long timestamp, int type, uint64_t track, const char* name,
                      long long counter_value) {
  uint8_t event_buffer[128], packet_buffer[160];
  struct pb event, packet;
  pb_init(&event, event_buffer, sizeof(event_buffer));
  pb_varint(&event, EVENT_TYPE, (uint64_t)type);
  pb_varint(&event, EVENT_TRACK_UUID, track);
  if (name != NULL) {
    pb_string(&event, EVENT_CATEGORIES, "c");
    pb_string(&event, EVENT_NAME, name);
  }
  if (type == TYPE_COUNTER) pb_varint(&event, EVENT_COUNTER_VALUE, (uint64_t)counter_value);
  pb_init(&packet, packet_buffer, sizeof(packet_buffer));
  pb_varint(&packet, PACKET_TIMESTAMP, (uint64_t)timestamp);
  pb_message(&packet, PACKET_TRACK_EVENT, &event);
  batch_add(b, &packet);
}

// Stand-in work for the "c step" slice to measure.
static uint32_t step(uint32_t seed) {
  uint32_t x = seed | 1;
  for (int i = 0; i < 2000; i++) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
  }
  return x;
}

static void iterate(struct producer* p, long iteration) {
  struct batch b = {0};
  add_event(&b, boottime_ns(), TYPE_SLICE_BEGIN, p->thread_uuid, "c work", 0);
  long long step_start = boottime_ns();
  add_event(&b, step_start, TYPE_SLICE_BEGIN, p->thread_uuid, "c step", 0);
  volatile uint32_t sink = step((uint32_t)iteration);
  (void)sink;
  long long step_end = boottime_ns();
  add_event(&b, step_end, TYPE_SLICE_END, p->thread_uuid, NULL, 0);
  add_event(&b, boottime_ns(), TYPE_INSTANT, p->thread_uuid, "c tick", 0);
  long long end = boottime_ns();
  add_event(&b, end, TYPE_SLICE_END, p->thread_uuid, NULL, 0);
  add_event(&b, end, TYPE_COUNTER, p->counter_uuid, NULL, step_end - step_start);
  if (write_batch(p, &b) != 0) p->dropped++;
}

// 1 if the service asked to stop (a byte, or the socket closed), 0 to go on.
static int stop_requested(int sock) {
  char byte;
  ssize_t n = recv(sock, &byte, 1, MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return 0;
  return 1;
}

int main(int argc, char** argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: ffmtrace-c-producer <socket> <page_size> <smb_size> <writer_id>\n");
    return 2;
  }
  uint32_t page_size = (uint32_t)strtoul(argv[2], NULL, 10);
  size_t size = (size_t)strtoull(argv[3], NULL, 10);
  long writer_id = strtol(argv[4], NULL, 10);
  if (writer_id < 1 || writer_id > 32767) {
    fprintf(stderr, "ffmtrace-c-producer: writer id %s is not 1..32767\n", argv[4]);
    return 2;
  }
  int sock = peer_connect(argv[1]);
  struct producer p = {0};
  if (smb_init(&p.smb, peer_map_received(sock, size), size, page_size) != 0 ||
      smb_chunk_size(page_size, LAYOUT) - SMB_CHUNK_HEADER_SIZE < BATCH_BYTES + BATCH_PACKETS * SMB_PACKET_HEADER_SIZE) {
    fprintf(stderr, "ffmtrace-c-producer: invalid page size %u or SMB size %zu\n", page_size, size);
    return 2;
  }
  smb_writer_init(&p.writer, &p.smb, (uint16_t)writer_id, LAYOUT);
  p.writer.wait_ms = CHUNK_WAIT_MS;
  p.pid = getpid();
  p.tid = gettid();
  uint64_t seed = (uint64_t)boottime_ns() ^ ((uint64_t)p.pid << 32);
  p.process_uuid = splitmix64(&seed) | 1;
  p.thread_uuid = splitmix64(&seed) | 1;
  p.counter_uuid = splitmix64(&seed) | 1;

  const struct timespec pace = {0, 1000000L};
  for (long iteration = 0; !stop_requested(sock); iteration++) {
    long long now = boottime_ns();
    if (!p.first_packet_written || now - p.last_described >= DESCRIBE_PERIOD_NS) {
      if (describe(&p) == 0) p.last_described = now;
    }
    if (p.first_packet_written) {
      iterate(&p, iteration);
    } else {
      p.dropped++;
    }
    nanosleep(&pace, NULL);
  }
  smb_writer_flush(&p.writer);
  char done[64];
  int length = snprintf(done, sizeof(done), "D %ld %ld\n", p.packets, p.dropped);
  if (send(sock, done, (size_t)length, MSG_NOSIGNAL) != length) peer_die("send");
  close(sock);
  return 0;
}
