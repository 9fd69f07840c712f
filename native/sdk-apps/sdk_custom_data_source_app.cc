// A program written against Perfetto's C++ SDK with a data source of its own, as users
// write one (perfetto::DataSource with an incremental state), for checking a tracing
// service with it: system backend, the SDK's default BufferExhaustedPolicy::kDrop.
//
// Data source "ffmtrace.sdk_counters". Once a session starts it, each of THREADS
// threads writes ITERATIONS packets: TracePacket { timestamp, for_testing = TestEvent {
// str = "tT", counter = i, seq_value = i * 31 + T } }. The first packet of a thread, and
// the first after each ClearIncrementalState the service sends, re-emits the state
// instead: sequence_flags = SEQ_INCREMENTAL_STATE_CLEARED and str = "state tT". After
// every 100 iterations a thread waits until its next 100 are due at --rate R per second
// (default 20,000; 0: no wait), so that a run lasts long enough for the session's
// incremental_state_config to clear the state a few times. Then each thread flushes its
// writer and waits for the service to acknowledge the commit (at most 10 s), and the
// program waits for the session to stop (at most 60 s) or, with --exit-after-flush,
// returns at once.
// Prints "started" when the data source starts, then
// "done THREADS ITERATIONS STATES" (STATES: the state packets written, over all threads).
//
// Built by ../shared/tools/build-perfetto-sdk-app.sh, like sdk_track_event_app.cc.
// Usage: BIN [--threads N] [--iterations N] [--rate R] [--exit-after-flush]

#include "perfetto/tracing/data_source.h"
#include "perfetto/tracing/tracing.h"
#include "protos/perfetto/common/data_source_descriptor.gen.h"
#include "protos/perfetto/trace/test_event.pbzero.h"
#include "protos/perfetto/trace/trace_packet.pbzero.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

// Cleared by the SDK when the service asks: the next packet re-emits the state.
struct CounterState {
  bool was_cleared = true;
};

struct CounterTraits : public perfetto::DefaultDataSourceTraits {
  using IncrementalStateType = CounterState;
};

std::mutex g_mutex;
std::condition_variable g_cv;
bool g_started = false;
bool g_stopped = false;

class CounterSource : public perfetto::DataSource<CounterSource, CounterTraits> {
 public:
  void OnSetup(const SetupArgs&) override {}
  void OnStart(const StartArgs&) override {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_started = true;
    g_cv.notify_all();
  }
  void OnStop(const StopArgs&) override {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_stopped = true;
    g_cv.notify_all();
  }
};

struct Options {
  int threads = 3;
  int iterations = 20000;
  double rate = 20000;
  bool exit_after_flush = false;
};

std::atomic<long> g_states{0};
std::atomic<int> g_unacked{0};  // threads whose flush the service did not acknowledge in 10 s

void Work(const Options& options, int thread) {
  using Clock = std::chrono::steady_clock;
  const std::string name = "t" + std::to_string(thread);
  const std::string state = "state " + name;
  const auto start = Clock::now();
  for (int i = 0; i < options.iterations; i++) {
    CounterSource::Trace([&](CounterSource::TraceContext ctx) {
      CounterState* incremental = ctx.GetIncrementalState();
      auto packet = ctx.NewTracePacket();
      packet->set_timestamp(static_cast<uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count()));
      // The packet's own fields before its nested message: protozero ends a nested message
      // when its parent is written to.
      const bool cleared = incremental->was_cleared;
      if (cleared) {
        incremental->was_cleared = false;
        packet->set_sequence_flags(perfetto::protos::pbzero::TracePacket::SEQ_INCREMENTAL_STATE_CLEARED);
        g_states++;
      }
      auto* event = packet->set_for_testing();
      event->set_str(cleared ? state : name);
      event->set_counter(static_cast<uint64_t>(i));
      event->set_seq_value(static_cast<uint32_t>(i * 31 + thread));
    });
    if (i % 100 == 99 && options.rate > 0) {
      std::this_thread::sleep_until(
          start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>((i + 1) / options.rate)));
    }
  }
  // Each thread's writer is its own: the thread flushes it, and waits until the service
  // has acknowledged the commit (the SDK calls back then).
  std::mutex mutex;
  std::condition_variable acked;
  bool done = false;
  CounterSource::Trace([&](CounterSource::TraceContext ctx) {
    ctx.Flush([&] {
      std::lock_guard<std::mutex> lock(mutex);
      done = true;
      acked.notify_all();
    });
  });
  std::unique_lock<std::mutex> lock(mutex);
  if (!acked.wait_for(lock, std::chrono::seconds(10), [&] { return done; })) g_unacked++;
}

bool Parse(int argc, char** argv, Options* options) {
  for (int i = 1; i < argc; i++) {
    const char* arg = argv[i];
    const char* value = i + 1 < argc ? argv[i + 1] : nullptr;
    if (!std::strcmp(arg, "--exit-after-flush")) {
      options->exit_after_flush = true;
      continue;
    }
    if (!value) return false;
    if (!std::strcmp(arg, "--threads")) options->threads = std::atoi(value);
    else if (!std::strcmp(arg, "--iterations")) options->iterations = std::atoi(value);
    else if (!std::strcmp(arg, "--rate")) options->rate = std::atof(value);
    else return false;
    i++;
  }
  return options->threads > 0 && options->iterations > 0 && options->rate >= 0;
}

}  // namespace

PERFETTO_DECLARE_DATA_SOURCE_STATIC_MEMBERS(CounterSource, CounterTraits);
PERFETTO_DEFINE_DATA_SOURCE_STATIC_MEMBERS(CounterSource, CounterTraits);

int main(int argc, char** argv) {
  Options options;
  if (!Parse(argc, argv, &options)) {
    std::fprintf(stderr, "usage: %s [--threads N] [--iterations N] [--rate R] [--exit-after-flush]\n", argv[0]);
    return 2;
  }
  perfetto::TracingInitArgs args;
  args.backends = perfetto::kSystemBackend;
  perfetto::Tracing::Initialize(args);
  perfetto::DataSourceDescriptor descriptor;
  descriptor.set_name("ffmtrace.sdk_counters");
  descriptor.set_handles_incremental_state_clear(true);
  CounterSource::Register(descriptor);

  {
    std::unique_lock<std::mutex> lock(g_mutex);
    g_cv.wait(lock, [] { return g_started; });
  }
  std::printf("started\n");
  std::fflush(stdout);

  std::vector<std::thread> threads;
  for (int t = 0; t < options.threads; t++) threads.emplace_back(Work, std::cref(options), t);
  for (auto& thread : threads) thread.join();
  std::printf("done %d %d %ld\n", options.threads, options.iterations, g_states.load());
  std::fflush(stdout);
  if (g_unacked > 0) {
    std::fprintf(stderr, "%d threads' flushes were not acknowledged within 10 s\n", g_unacked.load());
    return 1;
  }
  if (!options.exit_after_flush) {
    std::unique_lock<std::mutex> lock(g_mutex);
    if (!g_cv.wait_for(lock, std::chrono::seconds(60), [] { return g_stopped; })) {
      std::fprintf(stderr, "the session did not stop within 60 s\n");
      return 1;
    }
  }
  return 0;
}
