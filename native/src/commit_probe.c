// A producer that measures how long a service takes to give a committed chunk back:
// from the moment its writer releases a chunk as complete and sends CommitData, to the
// moment the chunk's state in the SMB is Free again. It speaks Perfetto's producer IPC,
// so the same numbers come from Perfetto's traced and from ffmtrace's ProducerPort, and
// it can run beside another producer (an SDK app at full rate) to see what that load does
// to the service's turnaround.
//
//   ffmtrace-commit-probe [--name NAME] [--interval-us N] [--packet-bytes N] [SOCKET]
//
// It registers data source "ffmtrace.commit_probe". From its start until its stop, every
// --interval-us microseconds (default 1000) it writes one packet of --packet-bytes
// (default 512; a for_testing payload) into a chunk, commits it at once (as an SDK
// writer's flush does) and waits for the chunk to come back: a short spin, then polls
// 5 us apart (a timer slack of 1 ns, so a poll oversleeps little). A chunk not back
// within a second is counted as late and waited no longer: its slot stays taken.
// At the stop it prints one line on stdout,
//   P <commits> <late> <p50> <p90> <p99> <p99.9> <max>
// the quantiles in nanoseconds over the chunks that came back, answers the stop and
// exits 0; 1 if the service broke the protocol or refused it, 2 for a bad command line
// or a socket it could not connect to. SOCKET is as c_producer.c's.
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "c_trace_writer.h"
#include "ffmtrace_util.h"
#include "perfetto_ipc.h"
#include "perfetto_trace_fields.h"
#include "producer_client.h"
#include "smb_abi.h"

enum {
  WRITER_ID = 1,
  PACKET_MAX = 2048,
  MAX_SAMPLES = 1 << 20,
  SPINS = 200,
};

static const char DATA_SOURCE[] = "ffmtrace.commit_probe";
static const long long LATE_NS = 1000000000LL;

struct probe {
  struct ipc_client ipc;
  struct smb smb;
  int smb_ready;
  struct ctw_writer writer;
  struct pc_commands commands;
  uint64_t instance;
  int started;
  int stopped;
  uint32_t packet_bytes;
  long long* samples;
  long count;
  long late;
  long violations;
};

static void send_commit(void* context, const struct pb* request, int flush) {
  struct probe* p = context;
  p->violations += pc_invoke(&p->ipc, "CommitData", request, !flush) != 0;
}

static uint8_t payload[PACKET_MAX];

// Writes one packet, commits its chunk and waits until the service has freed it.
static void probe_once(struct probe* p) {
  uint8_t bytes[PACKET_MAX + 64];
  struct ctw_packet k;
  ctw_packet_init(&k, bytes, sizeof(bytes));
  ctw_nest_begin(&k, PACKET_FOR_TESTING);
  pb_bytes(&k.pb, TEST_EVENT_STR, payload, p->packet_bytes);
  ctw_nest_end(&k);
  if (ctw_write_packet(&p->writer, &k) != 0 || p->writer.chunk == NULL) {
    // No free chunk: the previous ones are late. Counted as one more late commit.
    p->late++;
    return;
  }
  uint32_t page = p->writer.page, chunk = p->writer.chunk_index;
  long long start = clock_ns(CLOCK_MONOTONIC);
  ctw_commit(&p->writer, 0, 0);
  for (long spins = 0;; spins++) {
    if (smb_chunk_state_of(smb_page_bitmap(&p->smb, page), chunk) == SMB_FREE) break;
    long long waited = clock_ns(CLOCK_MONOTONIC) - start;
    if (waited > LATE_NS) {
      p->late++;
      return;
    }
    if (spins >= SPINS) nanosleep(&(struct timespec){.tv_nsec = 5000}, NULL);
  }
  if (p->count < MAX_SAMPLES) p->samples[p->count++] = clock_ns(CLOCK_MONOTONIC) - start;
}

static int compare(const void* a, const void* b) {
  long long x = *(const long long*)a, y = *(const long long*)b;
  return (x > y) - (x < y);
}

static long long quantile(const struct probe* p, double q) {
  if (p->count == 0) return 0;
  long index = (long)(q * (double)(p->count - 1) + 0.5);
  return p->samples[index];
}

static void report(struct probe* p) {
  qsort(p->samples, (size_t)p->count, sizeof(p->samples[0]), compare);
  printf("P %ld %ld %lld %lld %lld %lld %lld\n", p->count + p->late, p->late, quantile(p, 0.5), quantile(p, 0.9),
         quantile(p, 0.99), quantile(p, 0.999), p->count == 0 ? 0 : p->samples[p->count - 1]);
  fflush(stdout);
}

static int on_start(void* producer, uint64_t instance, uint32_t target) {
  struct probe* p = producer;
  if (p->started || !p->smb_ready) {
    p->violations += !p->smb_ready;
    return 0;
  }
  p->violations += pc_register_writer(&p->ipc, WRITER_ID, target) != 0;
  p->instance = instance;
  p->writer.target_buffer = target;
  p->started = 1;
  return 0;
}

static void on_stop(void* producer, uint64_t instance) {
  struct probe* p = producer;
  if (p->started && instance == p->instance) {
    p->started = 0;
    p->stopped = 1;
  }
  p->violations += pc_notify_stopped(&p->ipc, instance) != 0;
}

static void on_flush(void* producer, uint64_t request_id) {
  struct probe* p = producer;
  ctw_commit(&p->writer, 1, request_id);
}

static struct probe probe;

int main(int argc, char** argv) {
  const char* name = "ffmtrace-commit-probe";
  const char* socket_name = NULL;
  uint32_t interval_us = 1000, packet_bytes = 512;
  for (int i = 1; i < argc; i++) {
    int has_value = i + 1 < argc;
    if (strcmp(argv[i], "--name") == 0 && has_value) {
      name = argv[++i];
    } else if (strcmp(argv[i], "--interval-us") == 0 && has_value &&
               pc_parse_size(argv[i + 1], &interval_us) == 0) {
      i++;
    } else if (strcmp(argv[i], "--packet-bytes") == 0 && has_value &&
               pc_parse_size(argv[i + 1], &packet_bytes) == 0 && packet_bytes <= PACKET_MAX) {
      i++;
    } else if (argv[i][0] != '-' && socket_name == NULL) {
      socket_name = argv[i];
    } else {
      fprintf(stderr,
              "usage: ffmtrace-commit-probe [--name NAME] [--interval-us N] [--packet-bytes N] [SOCKET]\n"
              "(packet bytes from 1 to %d)\n",
              PACKET_MAX);
      return 2;
    }
  }
  if (socket_name == NULL) {
    const char* env = getenv("PERFETTO_PRODUCER_SOCK_NAME");
    socket_name = env != NULL && env[0] != '\0' ? env : "/tmp/perfetto-producer";
  }
  // The polls' sleeps end within a microsecond or so of when they were asked to.
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  struct probe* p = &probe;
  p->packet_bytes = packet_bytes;
  p->samples = malloc(sizeof(p->samples[0]) * MAX_SAMPLES);
  if (p->samples == NULL) return 2;
  memset(payload, 'p', sizeof(payload));
  ctw_writer_init(&p->writer, &p->smb, SMB_DIV1, WRITER_ID, send_commit, p, 0);
  p->commands = (struct pc_commands){.data_source = DATA_SOURCE, .ipc = &p->ipc, .smb = &p->smb,
                                     .smb_ready = &p->smb_ready, .producer = p, .start = on_start,
                                     .stop = on_stop, .flush = on_flush};
  uint64_t stream;
  struct pc_options options = {
      .program = "ffmtrace-commit-probe",
      .socket_name = socket_name,
      .producer_name = name,
      .smb_size = 256 * 1024,
      .page_size = 4096,
      .scraping = SMB_SCRAPING_UNSPECIFIED,
      .data_source = DATA_SOURCE,
  };
  int status = pc_connect(&p->ipc, &options, &stream);
  if (status != 0) return status;

  long long next = clock_ns(CLOCK_MONOTONIC);
  const long long pace_ns = (long long)interval_us * 1000;
  while (!p->stopped) {
    long long now = clock_ns(CLOCK_MONOTONIC);
    int timeout = !p->started ? 100 : next > now ? (int)((next - now + 999999) / 1000000) : 0;
    if (p->started && timeout > 0 && next - now < 1000000) timeout = 0;
    int served = pc_serve_once(&p->commands, stream, timeout, "ffmtrace-commit-probe");
    if (served != PC_GO_ON) {
      status = served == PC_FAILED;
      break;
    }
    if (!p->started) continue;
    now = clock_ns(CLOCK_MONOTONIC);
    if (now < next) {
      nanosleep(&(struct timespec){.tv_nsec = next - now}, NULL);
      continue;
    }
    next += pace_ns;
    if (next < now) next = now + pace_ns;
    probe_once(p);
  }
  if (p->stopped) report(p);
  ipc_close(&p->ipc);
  free(p->samples);
  return status != 0 ? status : p->violations > 0 ? 1 : 0;
}
