// The C producer of `ffmtrace record --c-producer`: a producer process that speaks
// Perfetto's producer IPC, so it joins ffmtrace's ProducerPort or Perfetto's traced alike.
//
//   ffmtrace-c-producer [--name NAME] [--smb-size BYTES] [--page-size BYTES] [--tick-bytes N]
//                       [--protovm-program FILE] [SOCKET]
//
// SOCKET is a path, or @name for the abstract namespace; without it, the producer socket
// Perfetto's SDK would use (PERFETTO_PRODUCER_SOCK_NAME, else /run/perfetto's). As
// Perfetto's ProducerIPCClientImpl, it binds "ProducerPort", initializes its connection
// (name, SMB size and page hints), opens the command stream and registers data source
// "track_event", which will notify on stop. SetupTracing brings the SMB; StartDataSource
// registers writer 1 for the config's target buffer, and from then on, every
// millisecond, it writes TrackEvent packets on a sequence of its own: descriptors of its
// process and thread tracks and of a counter track (restated every second), a "c work"
// slice holding a "c step" slice and a "c tick" instant, and the step's length on the
// counter track. The first time is right after the start, before it reads another
// command: a session stopped at once still holds one iteration. Timestamps are absolute
// CLOCK_BOOTTIME, the default trace clock.
// --tick-bytes N gives every "c tick" instant a debug annotation "payload" of N bytes: at
// more than a chunk's payload, every tick packet crosses a chunk boundary inside its open
// TrackEvent, so every iteration sends size fields as patches (a test's certainty that
// patching is exercised, where the workload's small packets cross chunks with an open
// size field only as their varying sizes happen to fall).
// --protovm-program FILE registers the ProtoVM program in FILE (a serialised VmProgram, at
// most 64 KiB) with the data source: a session whose config gives "track_event" a
// protovm_config runs it on the producer's packets its ring buffer overwrites.
//
// It writes as Perfetto's TraceWriter does (c_trace_writer.h: 4-byte size fields,
// packets fragmented across chunks, size fields left behind sent as patches, each chunk
// committed once full). Flush commits the chunk it holds and acknowledges the request
// id; StopDataSource commits it and answers NotifyDataSourceStopped.
//
// An iteration's packets are written only if the SMB has free chunks for all of them,
// so a full SMB drops whole iterations (counted) and never leaves a slice open. When
// the service closes the socket it prints "D <packets written> <iterations dropped>\n"
// on stdout and exits 0; status 1 if the service broke the protocol or refused it,
// 2 for a bad command line or a socket it could not connect to.
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "c_trace_writer.h"
#include "ffmtrace_util.h"
#include "perfetto_ipc.h"
#include "perfetto_trace_fields.h"
#include "producer_client.h"
#include "smb_abi.h"

enum {
  LAYOUT = SMB_DIV4,
  WRITER_ID = 1,
  PACKET_MAX = 4096,
  // Room in a packet for the tick's other fields and the annotation's tags and name.
  TICK_BYTES_MAX = PACKET_MAX - 128,
  DEFAULT_SMB_SIZE = 1 << 20,
  DEFAULT_PAGE_SIZE = 4096,
};

static const long long DESCRIBE_PERIOD_NS = 1000000000LL;
static const char DATA_SOURCE[] = "track_event";

// The tick annotation's bytes (--tick-bytes), all 'x'.
static uint8_t tick_payload[TICK_BYTES_MAX];

// A packet of the workload: the writer's encoded packet, over a buffer of its own.
struct packet {
  struct ctw_packet k;
  uint8_t bytes[PACKET_MAX];
};

static void packet_init(struct packet* k) { ctw_packet_init(&k->k, k->bytes, sizeof(k->bytes)); }

struct producer {
  struct ipc_client ipc;
  struct smb smb;
  int smb_ready;
  struct ctw_writer writer;
  struct pc_commands commands;
  // The data source instance being written, if started.
  uint64_t instance;
  int started;
  int first_packet_written;
  uint64_t process_uuid, thread_uuid, counter_uuid;
  int pid, tid;
  long long last_described;
  uint32_t tick_bytes;
  long packets;
  long dropped;
  long violations;
};

// The writer's commits: a flush's acknowledgement wants a reply, the others do not.
static void send_commit(void* context, const struct pb* request, int flush) {
  struct producer* p = context;
  p->violations += pc_invoke(&p->ipc, "CommitData", request, !flush) != 0;
}

// Writes packets all or none: none if the SMB lacks the chunks they may need.
static int write_packets(struct producer* p, const struct packet* packets, int count) {
  struct ctw_writer* w = &p->writer;
  size_t bytes = 0;
  for (int i = 0; i < count; i++) {
    if (packets[i].k.pb.failed) return -1;
    bytes += pb_size(&packets[i].k.pb) + SMB_PACKET_HEADER_SIZE;
  }
  size_t held = w->chunk == NULL ? 0 : (size_t)(w->end - w->cursor);
  // Generous: a chunk loses to fragment headers and uncut size fields far less than half.
  size_t needed = bytes <= held ? 0 : (bytes - held) / (ctw_payload_size(w) / 2) + 1;
  if (ctw_free_chunks(w) < needed) return -1;
  for (int i = 0; i < count; i++) {
    if (ctw_write_packet(w, &packets[i].k) != 0) return -1;
  }
  p->packets += count;
  return 0;
}

// ---- the workload ----

static void descriptor_packet(struct packet* k, int first) {
  packet_init(k);
  if (first) {
    pb_varint(&k->k.pb, PACKET_SEQUENCE_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
    pb_varint(&k->k.pb, PACKET_FIRST_PACKET_ON_SEQUENCE, 1);
  }
  ctw_nest_begin(&k->k, PACKET_TRACK_DESCRIPTOR);
}

// The three track descriptors, restated every second so that a ring buffer that wrapped
// still describes the tracks.
static int describe(struct producer* p) {
  struct packet k[3];
  descriptor_packet(&k[0], !p->first_packet_written);
  pb_varint(&k[0].k.pb, TRACK_UUID, p->process_uuid);
  ctw_nest_begin(&k[0].k, TRACK_PROCESS);
  pb_varint(&k[0].k.pb, PROCESS_PID, (uint64_t)p->pid);
  pb_string(&k[0].k.pb, PROCESS_NAME, "ffmtrace c producer");
  ctw_nest_end(&k[0].k);
  ctw_nest_end(&k[0].k);

  descriptor_packet(&k[1], 0);
  pb_varint(&k[1].k.pb, TRACK_UUID, p->thread_uuid);
  pb_varint(&k[1].k.pb, TRACK_PARENT_UUID, p->process_uuid);
  ctw_nest_begin(&k[1].k, TRACK_THREAD);
  pb_varint(&k[1].k.pb, THREAD_PID, (uint64_t)p->pid);
  pb_varint(&k[1].k.pb, THREAD_TID, (uint64_t)p->tid);
  pb_string(&k[1].k.pb, THREAD_NAME, "c producer main");
  ctw_nest_end(&k[1].k);
  ctw_nest_end(&k[1].k);

  descriptor_packet(&k[2], 0);
  pb_varint(&k[2].k.pb, TRACK_UUID, p->counter_uuid);
  pb_varint(&k[2].k.pb, TRACK_PARENT_UUID, p->process_uuid);
  pb_string(&k[2].k.pb, TRACK_NAME, "c step length");
  ctw_nest_begin(&k[2].k, TRACK_COUNTER);
  pb_varint(&k[2].k.pb, COUNTER_UNIT, UNIT_TIME_NS);
  ctw_nest_end(&k[2].k);
  ctw_nest_end(&k[2].k);

  if (write_packets(p, k, 3) != 0) return -1;
  p->first_packet_written = 1;
  return 0;
}

// A TrackEvent packet; name may be NULL (a slice end, a counter value), and so may
// payload (the tick's annotation, of payload_size bytes).
static void event_packet(struct packet* k, long long timestamp, int type, uint64_t track, const char* name,
                         long long counter_value, const uint8_t* payload, uint32_t payload_size) {
  packet_init(k);
  pb_varint(&k->k.pb, PACKET_TIMESTAMP, (uint64_t)timestamp);
  ctw_nest_begin(&k->k, PACKET_TRACK_EVENT);
  pb_varint(&k->k.pb, TRACK_EVENT_TYPE, (uint64_t)type);
  pb_varint(&k->k.pb, TRACK_EVENT_TRACK_UUID, track);
  if (name != NULL) {
    pb_string(&k->k.pb, TRACK_EVENT_CATEGORIES, "c");
    pb_string(&k->k.pb, TRACK_EVENT_NAME, name);
  }
  if (type == TRACK_EVENT_TYPE_COUNTER) pb_varint(&k->k.pb, TRACK_EVENT_COUNTER_VALUE, (uint64_t)counter_value);
  if (payload != NULL) {
    ctw_nest_begin(&k->k, TRACK_EVENT_DEBUG_ANNOTATIONS);
    pb_string(&k->k.pb, ANNOTATION_NAME, "payload");
    pb_bytes(&k->k.pb, ANNOTATION_STRING_VALUE, payload, payload_size);
    ctw_nest_end(&k->k);
  }
  ctw_nest_end(&k->k);
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
  struct packet k[6];
  event_packet(&k[0], clock_ns(CLOCK_BOOTTIME), TRACK_EVENT_TYPE_SLICE_BEGIN, p->thread_uuid, "c work", 0, NULL, 0);
  long long step_start = clock_ns(CLOCK_BOOTTIME);
  event_packet(&k[1], step_start, TRACK_EVENT_TYPE_SLICE_BEGIN, p->thread_uuid, "c step", 0, NULL, 0);
  volatile uint32_t sink = step((uint32_t)iteration);
  (void)sink;
  long long step_end = clock_ns(CLOCK_BOOTTIME);
  event_packet(&k[2], step_end, TRACK_EVENT_TYPE_SLICE_END, p->thread_uuid, NULL, 0, NULL, 0);
  event_packet(&k[3], clock_ns(CLOCK_BOOTTIME), TRACK_EVENT_TYPE_INSTANT, p->thread_uuid, "c tick", 0,
               p->tick_bytes > 0 ? tick_payload : NULL, p->tick_bytes);
  long long end = clock_ns(CLOCK_BOOTTIME);
  event_packet(&k[4], end, TRACK_EVENT_TYPE_SLICE_END, p->thread_uuid, NULL, 0, NULL, 0);
  event_packet(&k[5], end, TRACK_EVENT_TYPE_COUNTER, p->counter_uuid, NULL, step_end - step_start, NULL, 0);
  if (write_packets(p, k, 6) != 0) p->dropped++;
}

// ---- the service's commands ----

static void start(struct producer* p, uint64_t instance, uint32_t target) {
  if (p->started || !p->smb_ready) {
    // One instance at a time; another session's start is refused by never writing.
    p->violations += !p->smb_ready;
    return;
  }
  p->violations += pc_register_writer(&p->ipc, WRITER_ID, target) != 0;
  p->instance = instance;
  p->writer.target_buffer = target;
  p->started = 1;
  p->first_packet_written = 0;
}

// The command stream's callbacks (pc_commands).
static int on_start(void* producer, uint64_t instance, uint32_t target) {
  start(producer, instance, target);
  return 0;
}

static void on_stop(void* producer, uint64_t instance) {
  struct producer* p = producer;
  if (p->started && instance == p->instance) {
    ctw_commit(&p->writer, 0, 0);
    p->started = 0;
  }
  p->violations += pc_notify_stopped(&p->ipc, instance) != 0;
}

static void on_flush(void* producer, uint64_t request_id) {
  struct producer* p = producer;
  ctw_commit(&p->writer, 1, request_id);
}

static const char* default_socket(void) {
  const char* env = getenv("PERFETTO_PRODUCER_SOCK_NAME");
  if (env != NULL && env[0] != '\0') return env;
  // Perfetto's default on Linux: /run/perfetto if it exists, else /tmp.
  return access("/run/perfetto", F_OK) == 0 ? "/run/perfetto/traced-producer.sock" : "/tmp/perfetto-producer";
}

static struct producer producer;

int main(int argc, char** argv) {
  const char* name = "ffmtrace-c-producer";
  const char* socket_name = NULL;
  uint32_t smb_size = DEFAULT_SMB_SIZE, page_size = DEFAULT_PAGE_SIZE, tick_bytes = 0;
  uint8_t* protovm_program = NULL;
  size_t protovm_program_size = 0;
  for (int i = 1; i < argc; i++) {
    int has_value = i + 1 < argc;
    if (strcmp(argv[i], "--name") == 0 && has_value) {
      name = argv[++i];
    } else if (strcmp(argv[i], "--smb-size") == 0 && has_value && pc_parse_size(argv[i + 1], &smb_size) == 0) {
      i++;
    } else if (strcmp(argv[i], "--page-size") == 0 && has_value && pc_parse_size(argv[i + 1], &page_size) == 0) {
      i++;
    } else if (strcmp(argv[i], "--tick-bytes") == 0 && has_value && pc_parse_size(argv[i + 1], &tick_bytes) == 0 &&
               tick_bytes <= TICK_BYTES_MAX) {
      i++;
    } else if (strcmp(argv[i], "--protovm-program") == 0 && has_value && protovm_program == NULL) {
      if (pc_read_protovm_program("ffmtrace-c-producer", argv[++i], &protovm_program, &protovm_program_size) != 0) {
        return 2;
      }
    } else if (argv[i][0] != '-' && socket_name == NULL) {
      socket_name = argv[i];
    } else {
      fprintf(stderr,
              "usage: ffmtrace-c-producer [--name NAME] [--smb-size BYTES] [--page-size BYTES] [--tick-bytes N] "
              "[--protovm-program FILE] [SOCKET]\n(N from 1 to %d)\n",
              TICK_BYTES_MAX);
      return 2;
    }
  }
  if (socket_name == NULL) socket_name = default_socket();
  struct producer* p = &producer;
  p->tick_bytes = tick_bytes;
  memset(tick_payload, 'x', sizeof(tick_payload));
  ctw_writer_init(&p->writer, &p->smb, LAYOUT, WRITER_ID, send_commit, p, 0);
  p->commands = (struct pc_commands){.data_source = DATA_SOURCE, .ipc = &p->ipc, .smb = &p->smb,
                                     .smb_ready = &p->smb_ready, .producer = p, .start = on_start,
                                     .stop = on_stop, .flush = on_flush};
  uint64_t stream;
  struct pc_options options = {
      .program = "ffmtrace-c-producer",
      .socket_name = socket_name,
      .producer_name = name,
      .smb_size = smb_size,
      .page_size = page_size,
      .scraping = SMB_SCRAPING_UNSPECIFIED,
      .data_source = DATA_SOURCE,
      .protovm_program = protovm_program,
      .protovm_program_size = protovm_program_size,
  };
  int status = pc_connect(&p->ipc, &options, &stream);
  free(protovm_program);
  if (status != 0) return status;
  p->pid = getpid();
  p->tid = gettid();
  uint64_t seed = (uint64_t)clock_ns(CLOCK_BOOTTIME) ^ ((uint64_t)p->pid << 32);
  p->process_uuid = splitmix64(&seed) | 1;
  p->thread_uuid = splitmix64(&seed) | 1;
  p->counter_uuid = splitmix64(&seed) | 1;

  const long long pace_ns = 1000000LL;
  long long next = clock_ns(CLOCK_BOOTTIME);
  long iteration = 0;
  status = 0;
  for (;;) {
    long long now = clock_ns(CLOCK_BOOTTIME);
    int timeout = !p->started ? 100 : next > now ? (int)((next - now + 999999) / 1000000) : 0;
    int served = pc_serve_once(&p->commands, stream, timeout, "ffmtrace-c-producer");
    if (served != PC_GO_ON) {
      status = served == PC_FAILED;
      break;
    }
    // After a command too: a start writes at once.
    if (!p->started || clock_ns(CLOCK_BOOTTIME) < next) continue;
    next += pace_ns;
    if (next < clock_ns(CLOCK_BOOTTIME)) next = clock_ns(CLOCK_BOOTTIME) + pace_ns;
    now = clock_ns(CLOCK_BOOTTIME);
    if (!p->first_packet_written || now - p->last_described >= DESCRIBE_PERIOD_NS) {
      if (describe(p) == 0) p->last_described = now;
    }
    if (p->first_packet_written) {
      iterate(p, iteration++);
    } else {
      p->dropped++;
    }
  }
  ipc_close(&p->ipc);
  printf("D %ld %ld\n", p->packets, p->dropped);
  fflush(stdout);
  return status;
}
