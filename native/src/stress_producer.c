// The C producer of `ffmtrace stress`: T threads writing checkable packets into one SMB
// at once, over Perfetto's producer IPC.
//
//   ffmtrace-stress-producer --producer-id N --data-source NAME [--threads T]
//       [--packets-per-writer K] [--rate R] [--sizes small:70,medium:25,large:5]
//       [--seed S] [--policy drop|stall] [--ledger PATH] [--smb-size BYTES]
//       [--page-size BYTES] [--hold-commits N] [--die-at-chunk-commit N] SOCKET
//
// It connects as c_producer.c does (SMB scraping enabled) and registers data source
// NAME. StartDataSource starts T writer threads, writer ids 1..T registered for the
// config's target buffer, each on a sequence of its own; they take chunks through the
// SMB's atomic chunk states alone and send their commits under one lock on the socket.
// A writer writes K packets (0: until stopped), R per second (0: as fast as it can).
// The main thread reads the commands: Flush asks every writer to commit what it holds
// at its next packet boundary, waits briefly for them (the service scrapes the rest)
// and acknowledges; StopDataSource has each writer write a last packet, commit, and end,
// then answers NotifyDataSourceStopped. One data source instance runs per process.
//
// Packets (the stress verifier decodes exactly this): TracePacket { timestamp (8) =
// CLOCK_BOOTTIME; previous_packet_dropped (42) = 257 on the first packet written after
// a drop; for_testing (900) = TestEvent { str (1) = "<producer-id>/<writer-index>",
// counter (3) = the writer's sequence number, seq_value (2) = FNV-1a 32 over str, the
// counter as 8 little-endian bytes and the payload's strings in pre-order, is_last (4)
// on the last packet of a writer that stops cleanly, payload (5) = TestPayload { str
// (1)..., nested (2)... } } }. Every packet that is attempted takes a number, written or
// dropped. Sizes: small, one string of 8-48 bytes; medium, 2-4 strings of 100-900 bytes
// in all, the last in one nested payload; large, 2-16 KiB in strings of at most 1 KiB
// over a payload with 2-3 nested payloads of 2-3 nested payloads each. Strings are
// printable ASCII from a generator seeded by (seed, producer id, writer index).
//
// With --policy drop a packet that finds no free chunk is dropped, one that runs out
// mid-way abandoned (c_trace_writer.h); with stall the writer waits for a chunk. A
// writer's last packet waits up to a second under drop, so that a clean stop shows it.
// --hold-commits N: each writer sends none of its commits, its flushes' included, until it
// has attempted N packets (or ends), then sends them as one request (CommitDataRequests merge by concatenation)
// and from then on waits for free chunks, as a producer whose batching outlasted its SMB.
// The service frees none of its chunks meanwhile, so the writer's first N packets drop
// once the chunks it can take are full, whatever the timing: with drop, a writer whose N
// packets need more chunks than the SMB has certainly drops, and its next packet after
// the release is certainly written and announces the loss.
//
// --die-at-chunk-commit N: the process kills itself (SIGKILL) at its Nth commit that moves a
// chunk, before sending it: it dies with that chunk marked complete and never committed,
// the moment a random kill -9 rarely meets. With one writer the moment is the same every run.
//
// --ledger names a file of T 8-byte slots: after each packet, writer i stores (release)
// its packets attempted in slot i, little-endian, for whoever outlives a kill -9.
//
// When the service closes the socket, or on SIGINT or SIGTERM, it prints
// "W <writer-index> <attempted> <dropped>" for each writer and exits 0; 1 if the service broke the protocol or refused it, 2 for
// a bad command line, ledger or socket.
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
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
  MAX_THREADS = 512,
  DEFAULT_SMB_SIZE = 4 << 20,
  DEFAULT_PAGE_SIZE = 4096,
  SMALL_MIN = 8,
  SMALL_MAX = 48,
  MEDIUM_MIN = 100,
  MEDIUM_MAX = 900,
  LARGE_MIN = 2 * 1024,
  LARGE_MAX = 16 * 1024,
  MAX_STRING = 1024,
  // A large payload's nodes: the root, up to 3 children, up to 3 grandchildren each.
  MAX_NODES = 1 + 3 + 3 * 3,
  // The largest packet: its strings, their tags and lengths, the messages' headers.
  PACKET_MAX = LARGE_MAX + 4 * 1024,
  FLUSH_WAIT_MS = 100,
  STOP_POLL_MS = 10,
  IDLE_POLL_MS = 100,
};

static const long long LAST_PACKET_WAIT_NS = 1000000000LL;

enum size_class { SMALL, MEDIUM, LARGE, SIZE_CLASSES };
static const char* const SIZE_NAMES[SIZE_CLASSES] = {"small", "medium", "large"};

struct options {
  uint32_t producer_id;
  const char* data_source;
  int threads;
  uint64_t packets_per_writer;
  uint32_t rate;
  uint32_t weights[SIZE_CLASSES];
  uint64_t seed;
  int stall;
  const char* ledger;
  uint32_t smb_size, page_size;
  uint64_t hold_commits;
  uint64_t die_at_chunk_commit;
  const char* socket_name;
};

// A payload node, in pre-order: its strings (bytes split evenly), then its children.
struct node {
  uint32_t strings;
  uint32_t children;
  uint32_t bytes;
};

struct stress;

struct writer {
  struct stress* s;
  int index;
  pthread_t thread;
  uint64_t rng;
  uint64_t counter;  // the next packet's number: packets attempted
  uint64_t dropped;
  int previous_dropped;
  char name[24];
  size_t name_size;
  uint64_t flush_seen;
  atomic_ullong flush_done;  // the last flush request answered; UINT64_MAX once finished
  struct node nodes[MAX_NODES];
  uint8_t strings[LARGE_MAX];
  struct ctw_packet packet;
  uint8_t bytes[PACKET_MAX];
  struct ctw_writer w;
  // Commits kept back under --hold-commits: serialized CommitDataRequests, one after another.
  int holding;
  uint8_t* held;
  size_t held_size, held_capacity;
};

struct stress {
  struct options o;
  struct ipc_client ipc;
  pthread_mutex_t send_lock;  // the socket, for every thread's requests
  struct smb smb;
  int smb_ready;
  _Atomic uint64_t* ledger;
  // The run: started once, by the first StartDataSource of our data source.
  int started, running, stopping;
  struct pc_commands commands;
  uint64_t instance;
  uint32_t target;
  struct writer* writers[MAX_THREADS];
  // Wakes writers (wake) and the main thread (acked); guards finished.
  pthread_mutex_t lock;
  pthread_cond_t wake, acked;
  int finished;
  atomic_int stop, cancel;
  atomic_ullong flush_asked;
  atomic_ullong chunk_commits;  // for --die-at-chunk-commit
};

static struct timespec timespec_of(long long ns) {
  struct timespec ts = {ns / 1000000000LL, ns % 1000000000LL};
  return ts;
}

static uint32_t uniform(struct writer* wr, uint32_t low, uint32_t high) {
  return low + (uint32_t)(splitmix64(&wr->rng) % (high - low + 1));
}

// ---- requests ----

static void wake_all(struct stress* s) {
  pthread_mutex_lock(&s->lock);
  pthread_cond_broadcast(&s->wake);
  pthread_cond_broadcast(&s->acked);
  pthread_mutex_unlock(&s->lock);
}

// Sends a request from any thread. When it cannot be sent the connection is broken:
// writers stop, and the socket is shut down so that the main thread sees the hang-up.
static void send_request(struct stress* s, const char* method, const struct pb* args, int drop_reply) {
  pthread_mutex_lock(&s->send_lock);
  int sent = !args->failed && ipc_invoke(&s->ipc, method, args->start, pb_size(args), drop_reply) != 0;
  if (!sent) shutdown(s->ipc.sock, SHUT_RDWR);
  pthread_mutex_unlock(&s->send_lock);
  if (!sent) {
    atomic_store(&s->cancel, 1);
    wake_all(s);
  }
}

// Whether a commit moves a chunk: c_trace_writer puts chunks_to_move (field 1, length-
// delimited) first when it has one.
static int moves_chunk(const struct pb* request) {
  return pb_size(request) > 0 && request->start[0] == (COMMIT_CHUNKS_TO_MOVE << 3 | PB_BYTES);
}

static void send_commit(void* context, const struct pb* request, int flush) {
  struct writer* wr = context;
  uint64_t die_at = wr->s->o.die_at_chunk_commit;
  if (die_at > 0 && moves_chunk(request) && atomic_fetch_add(&wr->s->chunk_commits, 1) + 1 == die_at) {
    raise(SIGKILL);
  }
  if (wr->holding && !request->failed) {
    size_t size = pb_size(request);
    if (wr->held_size + size > wr->held_capacity) {
      size_t capacity = (wr->held_size + size) * 2;
      uint8_t* grown = realloc(wr->held, capacity);
      if (grown == NULL) {
        fprintf(stderr, "ffmtrace-stress-producer: no memory for held commits\n");
        exit(2);
      }
      wr->held = grown;
      wr->held_capacity = capacity;
    }
    memcpy(wr->held + wr->held_size, request->start, size);
    wr->held_size += size;
    return;
  }
  send_request(wr->s, "CommitData", request, !flush);
}

// Ends --hold-commits for a writer: its held commits go as one request, and it waits for
// chunks from now on.
static void release_held(struct writer* wr) {
  if (wr->held_size > 0) {
    struct pb request;
    pb_init(&request, wr->held, wr->held_size);
    request.at = wr->held + wr->held_size;
    send_request(wr->s, "CommitData", &request, 1);
  }
  free(wr->held);
  wr->held = NULL;
  wr->held_size = wr->held_capacity = 0;
  wr->holding = 0;
  wr->w.wait_ns = -1;
}

// ---- packets ----

static enum size_class pick_size(struct writer* wr) {
  const uint32_t* weights = wr->s->o.weights;
  uint32_t total = weights[SMALL] + weights[MEDIUM] + weights[LARGE];
  uint32_t r = (uint32_t)(splitmix64(&wr->rng) % total);
  if (r < weights[SMALL]) return SMALL;
  return r < weights[SMALL] + weights[MEDIUM] ? MEDIUM : LARGE;
}

static void set_node(struct node* n, uint32_t bytes, uint32_t children) {
  n->bytes = bytes;
  n->strings = (bytes + MAX_STRING - 1) / MAX_STRING;
  n->children = children;
}

// Chooses the payload's shape; returns its nodes and, in *bytes, its string bytes.
static int plan(struct writer* wr, uint32_t* bytes) {
  struct node* n = wr->nodes;
  switch (pick_size(wr)) {
    case SMALL:
      *bytes = uniform(wr, SMALL_MIN, SMALL_MAX);
      set_node(&n[0], *bytes, 0);
      return 1;
    case MEDIUM: {
      *bytes = uniform(wr, MEDIUM_MIN, MEDIUM_MAX);
      uint32_t strings = uniform(wr, 2, 4);
      uint32_t own = *bytes / strings * (strings - 1);
      n[0] = (struct node){.strings = strings - 1, .children = 1, .bytes = own};
      set_node(&n[1], *bytes - own, 0);
      return 2;
    }
    default: {
      *bytes = uniform(wr, LARGE_MIN, LARGE_MAX);
      uint32_t children = uniform(wr, 2, 3);
      uint32_t grandchildren = uniform(wr, 2, 3);
      int count = (int)(1 + children + children * grandchildren);
      uint32_t each = *bytes / (uint32_t)count;
      int i = 0;
      set_node(&n[i++], each, children);
      for (uint32_t c = 0; c < children; c++) {
        set_node(&n[i++], each, grandchildren);
        for (uint32_t g = 0; g < grandchildren; g++) set_node(&n[i++], each, 0);
      }
      // The remainder goes to the last node, still under MAX_STRING a string.
      set_node(&n[count - 1], *bytes - each * (uint32_t)(count - 1), 0);
      return count;
    }
  }
}

static void fill(struct writer* wr, uint8_t* out, size_t size) {
  while (size > 0) {
    uint64_t r = splitmix64(&wr->rng);
    for (int i = 0; i < 8 && size > 0; i++, size--, r >>= 8) *out++ = (uint8_t)(' ' + ((r & 0xff) * 95 >> 8));
  }
}

// Encodes node i and its descendants; returns the index after them.
static int encode_node(struct writer* wr, int i, size_t* at) {
  struct ctw_packet* k = &wr->packet;
  const struct node* n = &wr->nodes[i];
  for (uint32_t j = 0; j < n->strings; j++) {
    size_t size = n->bytes / n->strings + (j < n->bytes % n->strings);
    pb_bytes(&k->pb, TEST_PAYLOAD_STR, wr->strings + *at, size);
    *at += size;
  }
  int next = i + 1;
  for (uint32_t c = 0; c < n->children; c++) {
    ctw_nest_begin(k, TEST_PAYLOAD_NESTED);
    next = encode_node(wr, next, at);
    ctw_nest_end(k);
  }
  return next;
}

static void encode(struct writer* wr, uint64_t counter, int last) {
  uint32_t bytes;
  plan(wr, &bytes);
  // The strings, generated in pre-order, which is also the order they are encoded in.
  fill(wr, wr->strings, bytes);
  uint8_t counter_le[8];
  for (int i = 0; i < 8; i++) counter_le[i] = (uint8_t)(counter >> (8 * i));
  uint32_t hash = fnv1a32(FNV1A32_OFFSET, wr->name, wr->name_size);
  hash = fnv1a32(hash, counter_le, sizeof(counter_le));
  hash = fnv1a32(hash, wr->strings, bytes);

  struct ctw_packet* k = &wr->packet;
  ctw_packet_init(k, wr->bytes, sizeof(wr->bytes));
  pb_varint(&k->pb, PACKET_TIMESTAMP, (uint64_t)clock_ns(CLOCK_BOOTTIME));
  if (wr->previous_dropped) pb_varint(&k->pb, PACKET_PREVIOUS_PACKET_DROPPED, LOSS_PRESENT | LOSS_SMB_FULL);
  ctw_nest_begin(k, PACKET_FOR_TESTING);
  pb_bytes(&k->pb, TEST_EVENT_STR, wr->name, wr->name_size);
  pb_varint(&k->pb, TEST_EVENT_COUNTER, counter);
  pb_varint(&k->pb, TEST_EVENT_SEQ_VALUE, hash);
  if (last) pb_varint(&k->pb, TEST_EVENT_IS_LAST, 1);
  ctw_nest_begin(k, TEST_EVENT_PAYLOAD);
  size_t at = 0;
  encode_node(wr, 0, &at);
  ctw_nest_end(k);
  ctw_nest_end(k);
}

static void write_one(struct writer* wr, int last) {
  uint64_t counter = wr->counter++;
  encode(wr, counter, last);
  long long wait_ns = wr->w.wait_ns;
  if (last && wait_ns == 0) wr->w.wait_ns = LAST_PACKET_WAIT_NS;
  int written = ctw_write_packet(&wr->w, &wr->packet) == 0;
  wr->w.wait_ns = wait_ns;
  if (written) {
    wr->previous_dropped = 0;
  } else {
    wr->dropped++;
    wr->previous_dropped = 1;
  }
  if (wr->holding && wr->counter == wr->s->o.hold_commits) release_held(wr);
  if (wr->s->ledger != NULL) {
    atomic_store_explicit(&wr->s->ledger[wr->index], htole64(counter + 1), memory_order_release);
  }
}

// ---- writer threads ----

static int woken(const struct writer* wr) {
  const struct stress* s = wr->s;
  return atomic_load(&s->flush_asked) != wr->flush_seen || atomic_load(&s->stop) || atomic_load(&s->cancel);
}

// Commits what the writer holds if a flush was asked since it last looked.
static void answer_flush(struct writer* wr) {
  struct stress* s = wr->s;
  uint64_t asked = atomic_load_explicit(&s->flush_asked, memory_order_acquire);
  if (asked == wr->flush_seen) return;
  wr->flush_seen = asked;
  ctw_commit(&wr->w, 0, 0);
  pthread_mutex_lock(&s->lock);
  atomic_store(&wr->flush_done, asked);
  pthread_cond_broadcast(&s->acked);
  pthread_mutex_unlock(&s->lock);
}

// Waits for the next packet's time; -1 if a flush, the stop or a cancel came first.
static int pace(struct writer* wr, long long* next, long long period) {
  struct stress* s = wr->s;
  if (clock_ns(CLOCK_MONOTONIC) < *next) {
    struct timespec until = timespec_of(*next);
    pthread_mutex_lock(&s->lock);
    while (!woken(wr) && clock_ns(CLOCK_MONOTONIC) < *next) pthread_cond_timedwait(&s->wake, &s->lock, &until);
    pthread_mutex_unlock(&s->lock);
    if (clock_ns(CLOCK_MONOTONIC) < *next) return -1;
  }
  // A writer that fell behind goes on from now rather than catching up in a burst.
  long long now = clock_ns(CLOCK_MONOTONIC);
  *next = *next + period < now ? now : *next + period;
  return 0;
}

static void* run_writer(void* arg) {
  struct writer* wr = arg;
  struct stress* s = wr->s;
  uint64_t limit = s->o.packets_per_writer;
  long long period = s->o.rate == 0 ? 0 : 1000000000LL / s->o.rate;
  long long next = clock_ns(CLOCK_MONOTONIC);
  for (;;) {
    answer_flush(wr);
    if (atomic_load(&s->stop) || atomic_load(&s->cancel) || (limit != 0 && wr->counter >= limit)) break;
    if (period > 0 && pace(wr, &next, period) != 0) continue;
    write_one(wr, limit != 0 && wr->counter == limit - 1);
  }
  if (!atomic_load(&s->cancel) && (limit == 0 || wr->counter < limit)) write_one(wr, 1);
  ctw_commit(&wr->w, 0, 0);
  if (wr->holding) release_held(wr);
  pthread_mutex_lock(&s->lock);
  atomic_store(&wr->flush_done, UINT64_MAX);
  s->finished++;
  pthread_cond_broadcast(&s->acked);
  pthread_mutex_unlock(&s->lock);
  return NULL;
}

static struct writer* new_writer(struct stress* s, int index) {
  struct writer* wr = calloc(1, sizeof(*wr));
  if (wr == NULL) return NULL;
  wr->s = s;
  wr->index = index;
  uint64_t mix = s->o.seed ^ ((uint64_t)s->o.producer_id << 32) ^ (uint64_t)index;
  wr->rng = splitmix64(&mix);
  wr->name_size = (size_t)snprintf(wr->name, sizeof(wr->name), "%u/%d", s->o.producer_id, index);
  wr->flush_seen = atomic_load(&s->flush_asked);
  atomic_store(&wr->flush_done, wr->flush_seen);
  // Writers start their search for chunks apart, each in its own share of the pages.
  ctw_writer_init(&wr->w, &s->smb, LAYOUT, (uint16_t)(index + 1), send_commit, wr,
                  (uint32_t)((uint64_t)s->smb.num_pages * (uint64_t)index / (uint64_t)s->o.threads));
  wr->w.target_buffer = s->target;
  wr->w.wait_ns = s->o.stall ? -1 : 0;
  wr->w.cancel = &s->cancel;
  wr->holding = s->o.hold_commits > 0;
  return wr;
}

// ---- the service's commands ----

static void start(struct stress* s, uint64_t instance, uint32_t target) {
  if (s->started || !s->smb_ready) return;
  s->started = 1;
  s->instance = instance;
  s->target = target;
  for (int i = 0; i < s->o.threads; i++) {
    uint8_t buffer[32];
    struct pb request;
    pb_init(&request, buffer, sizeof(buffer));
    pb_varint(&request, REGISTER_WRITER_ID, (uint64_t)i + 1);
    pb_varint(&request, REGISTER_WRITER_TARGET_BUFFER, target);
    send_request(s, "RegisterTraceWriter", &request, 1);
  }
  for (int i = 0; i < s->o.threads; i++) {
    s->writers[i] = new_writer(s, i);
    if (s->writers[i] == NULL || pthread_create(&s->writers[i]->thread, NULL, run_writer, s->writers[i]) != 0) {
      fprintf(stderr, "ffmtrace-stress-producer: cannot start writer %d\n", i);
      exit(2);
    }
  }
  s->running = 1;
}

static int all_acked(struct stress* s, uint64_t asked) {
  for (int i = 0; i < s->o.threads; i++) {
    if (atomic_load(&s->writers[i]->flush_done) < asked) return 0;
  }
  return 1;
}

static void flush(struct stress* s, uint64_t flush_id) {
  if (s->running) {
    pthread_mutex_lock(&s->lock);
    uint64_t asked = atomic_fetch_add(&s->flush_asked, 1) + 1;
    pthread_cond_broadcast(&s->wake);
    struct timespec until = timespec_of(clock_ns(CLOCK_MONOTONIC) + FLUSH_WAIT_MS * 1000000LL);
    while (!all_acked(s, asked) && !atomic_load(&s->cancel)) {
      if (pthread_cond_timedwait(&s->acked, &s->lock, &until) == ETIMEDOUT) break;
    }
    pthread_mutex_unlock(&s->lock);
  }
  uint8_t buffer[16];
  struct pb request;
  pb_init(&request, buffer, sizeof(buffer));
  pb_varint(&request, COMMIT_FLUSH_REQUEST_ID, flush_id);
  send_request(s, "CommitData", &request, 0);
}

static void notify_stopped(struct stress* s, uint64_t instance) {
  uint8_t buffer[16];
  struct pb request;
  pb_init(&request, buffer, sizeof(buffer));
  pb_varint(&request, NOTIFY_DATA_SOURCE_ID, instance);
  send_request(s, "NotifyDataSourceStopped", &request, 0);
}

static void join_writers(struct stress* s) {
  for (int i = 0; i < s->o.threads; i++) pthread_join(s->writers[i]->thread, NULL);
  s->running = 0;
}

// Ends a stop whose writers have all finished.
static void complete_stop(struct stress* s) {
  pthread_mutex_lock(&s->lock);
  int done = s->finished == s->o.threads;
  pthread_mutex_unlock(&s->lock);
  if (!done) return;
  join_writers(s);
  s->stopping = 0;
  notify_stopped(s, s->instance);
}

// The command stream's callbacks (pc_commands).
static int on_start(void* producer, uint64_t instance, uint32_t target) {
  struct stress* s = producer;
  if (!s->smb_ready) return -1;
  start(s, instance, target);
  return 0;
}

static void on_stop(void* producer, uint64_t instance) {
  struct stress* s = producer;
  if (s->running && !s->stopping && instance == s->instance) {
    // Answered once the writers have finished: complete_stop.
    s->stopping = 1;
    atomic_store(&s->stop, 1);
    wake_all(s);
  } else if (!(s->stopping && instance == s->instance)) {
    notify_stopped(s, instance);
  }
}

static void on_flush(void* producer, uint64_t request_id) { flush(producer, request_id); }

// ---- the command line ----

// "small:70,medium:25,large:5": weights by name, any of them left out weighing 0.
static int parse_sizes(const char* text, uint32_t* weights) {
  char copy[128];
  if (strlen(text) >= sizeof(copy)) return -1;
  strcpy(copy, text);
  memset(weights, 0, SIZE_CLASSES * sizeof(*weights));
  uint64_t total = 0;
  char* saved;
  for (char* item = strtok_r(copy, ",", &saved); item != NULL; item = strtok_r(NULL, ",", &saved)) {
    char* colon = strchr(item, ':');
    if (colon == NULL) return -1;
    *colon = '\0';
    int known = 0;
    for (int c = 0; c < SIZE_CLASSES; c++) {
      if (strcmp(item, SIZE_NAMES[c]) != 0) continue;
      if (parse_u32(colon + 1, 1000000, &weights[c]) != 0) return -1;
      known = 1;
    }
    if (!known) return -1;
  }
  for (int c = 0; c < SIZE_CLASSES; c++) total += weights[c];
  return total == 0 ? -1 : 0;
}

static int parse_options(int argc, char** argv, struct options* o) {
  uint64_t value;
  int has_id = 0;
  *o = (struct options){.threads = 1, .seed = 1, .smb_size = DEFAULT_SMB_SIZE, .page_size = DEFAULT_PAGE_SIZE};
  parse_sizes("small:70,medium:25,large:5", o->weights);
  for (int i = 1; i < argc; i++) {
    const char* flag = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : NULL;
    if (flag[0] != '-') {
      if (o->socket_name != NULL) return -1;
      o->socket_name = flag;
      continue;
    }
    if (v == NULL) return -1;
    i++;
    if (strcmp(flag, "--producer-id") == 0) {
      if (parse_u32(v, UINT32_MAX, &o->producer_id) != 0) return -1;
      has_id = 1;
    } else if (strcmp(flag, "--data-source") == 0) {
      o->data_source = v;
    } else if (strcmp(flag, "--threads") == 0) {
      if (parse_u64(v, MAX_THREADS, &value) != 0 || value == 0) return -1;
      o->threads = (int)value;
    } else if (strcmp(flag, "--packets-per-writer") == 0) {
      if (parse_u64(v, UINT64_MAX, &o->packets_per_writer) != 0) return -1;
    } else if (strcmp(flag, "--rate") == 0) {
      if (parse_u32(v, UINT32_MAX, &o->rate) != 0) return -1;
    } else if (strcmp(flag, "--sizes") == 0) {
      if (parse_sizes(v, o->weights) != 0) return -1;
    } else if (strcmp(flag, "--seed") == 0) {
      if (parse_u64(v, UINT64_MAX, &o->seed) != 0) return -1;
    } else if (strcmp(flag, "--policy") == 0) {
      if (strcmp(v, "drop") != 0 && strcmp(v, "stall") != 0) return -1;
      o->stall = strcmp(v, "stall") == 0;
    } else if (strcmp(flag, "--ledger") == 0) {
      o->ledger = v;
    } else if (strcmp(flag, "--smb-size") == 0) {
      if (pc_parse_size(v, &o->smb_size) != 0) return -1;
    } else if (strcmp(flag, "--page-size") == 0) {
      if (pc_parse_size(v, &o->page_size) != 0) return -1;
    } else if (strcmp(flag, "--hold-commits") == 0) {
      if (parse_u64(v, UINT64_MAX, &o->hold_commits) != 0) return -1;
    } else if (strcmp(flag, "--die-at-chunk-commit") == 0) {
      if (parse_u64(v, UINT64_MAX, &o->die_at_chunk_commit) != 0) return -1;
    } else {
      return -1;
    }
  }
  return has_id && o->data_source != NULL && o->data_source[0] != '\0' && o->socket_name != NULL ? 0 : -1;
}

static _Atomic uint64_t* map_ledger(const char* path, int threads) {
  size_t size = (size_t)threads * sizeof(uint64_t);
  int fd = open(path, O_RDWR | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || st.st_size < (off_t)size) {
    if (fd >= 0) close(fd);
    return NULL;
  }
  void* ledger = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  return ledger == MAP_FAILED ? NULL : ledger;
}

static int has_method(const struct ipc_client* c, const char* name) {
  for (int i = 0; i < c->method_count; i++) {
    if (strcmp(c->methods[i].name, name) == 0) return 1;
  }
  return 0;
}

static struct stress stress;
static volatile sig_atomic_t signalled;

static void on_signal(int signal) { signalled = signal; }

int main(int argc, char** argv) {
  struct stress* s = &stress;
  if (parse_options(argc, argv, &s->o) != 0) {
    fprintf(stderr,
            "usage: ffmtrace-stress-producer --producer-id N --data-source NAME [--threads T]\n"
            "    [--packets-per-writer K] [--rate R] [--sizes small:70,medium:25,large:5] [--seed S]\n"
            "    [--policy drop|stall] [--ledger PATH] [--smb-size BYTES] [--page-size BYTES]\n"
            "    [--hold-commits N] [--die-at-chunk-commit N] SOCKET\n");
    return 2;
  }
  if (s->o.ledger != NULL && (s->ledger = map_ledger(s->o.ledger, s->o.threads)) == NULL) {
    fprintf(stderr, "ffmtrace-stress-producer: %s is no ledger of %d slots\n", s->o.ledger, s->o.threads);
    return 2;
  }
  struct sigaction action = {.sa_handler = on_signal};
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, NULL);
  sigaction(SIGTERM, &action, NULL);
  pthread_mutex_init(&s->send_lock, NULL);
  pthread_mutex_init(&s->lock, NULL);
  pthread_condattr_t monotonic;
  pthread_condattr_init(&monotonic);
  pthread_condattr_setclock(&monotonic, CLOCK_MONOTONIC);
  pthread_cond_init(&s->wake, &monotonic);
  pthread_cond_init(&s->acked, &monotonic);

  char name[64];
  snprintf(name, sizeof(name), "ffmtrace-stress-producer-%u", s->o.producer_id);
  struct pc_options options = {
      .program = "ffmtrace-stress-producer",
      .socket_name = s->o.socket_name,
      .producer_name = name,
      .smb_size = s->o.smb_size,
      .page_size = s->o.page_size,
      .scraping = SMB_SCRAPING_ENABLED,
      .data_source = s->o.data_source,
  };
  s->commands = (struct pc_commands){.data_source = s->o.data_source, .ipc = &s->ipc, .smb = &s->smb,
                                     .smb_ready = &s->smb_ready, .producer = s, .start = on_start,
                                     .stop = on_stop, .flush = on_flush};
  uint64_t stream;
  int status = pc_connect(&s->ipc, &options, &stream);
  if (status != 0) return status;
  if (!has_method(&s->ipc, "CommitData") || !has_method(&s->ipc, "RegisterTraceWriter") ||
      !has_method(&s->ipc, "NotifyDataSourceStopped")) {
    fprintf(stderr, "ffmtrace-stress-producer: %s lacks the producer port's methods\n", s->o.socket_name);
    return 1;
  }

  // A signal ends the loop within a poll period (ipc_receive polls again on EINTR).
  while (!signalled) {
    int served = pc_serve_once(&s->commands, stream, s->stopping ? STOP_POLL_MS : IDLE_POLL_MS,
                               "ffmtrace-stress-producer");
    if (served != PC_GO_ON) {
      status = served == PC_FAILED;
      break;
    }
    if (s->stopping) complete_stop(s);
  }
  atomic_store(&s->cancel, 1);
  wake_all(s);
  if (s->running) join_writers(s);
  pthread_mutex_lock(&s->send_lock);
  ipc_close(&s->ipc);
  pthread_mutex_unlock(&s->send_lock);
  for (int i = 0; i < s->o.threads; i++) {
    const struct writer* wr = s->writers[i];
    printf("W %d %llu %llu\n", i, wr == NULL ? 0ULL : (unsigned long long)wr->counter,
           wr == NULL ? 0ULL : (unsigned long long)wr->dropped);
  }
  fflush(stdout);
  return status;
}
