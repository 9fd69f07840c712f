// A program written against Perfetto's C++ SDK, as its users write them, for checking a
// tracing service (Perfetto's traced or `ffmtrace serve`) with a real SDK producer at
// full rate. System backend; data source track_event with the SDK's default
// BufferExhaustedPolicy::kDrop, so chunks that do not come back from the service in time
// are lost packets in the trace (trace_writer_packet_loss), not a stalled writer.
//
// Once a session starts track_event, each of THREADS threads runs ITERATIONS times:
//   a slice "frame" (debug annotation "i"), in it a slice named by a DynamicString
//   ("step N" with N = i % 16), a counter "counter tT" (value i) and an instant "tick"
//   in the "debug"-tagged category "app.debug" (recorded only if the config enables
//   the tag); after every 100 iterations a pause of PAUSE_US microseconds (10), or, with
//   --rate R, a wait until the thread's next 100 iterations are due at R per second.
// Then TrackEvent::Flush(), and the program waits for the session to stop (at most
// 60 s) or, with --exit-after-flush, returns at once.
// Prints "started" when tracing starts, then "done THREADS ITERATIONS SECONDS".
//
// Built by ../shared/tools/build-perfetto-sdk-app.sh (not by native/Makefile: the SDK
// is not part of this tree):
//   build-perfetto-sdk-app.sh /tmp/perfetto-ref native/sdk-apps/sdk_track_event_app.cc -o BIN
// Usage: BIN [--threads N] [--iterations N] [--pause-us N] [--rate R] [--exit-after-flush]

#include "perfetto/tracing/tracing.h"
#include "perfetto/tracing/track_event.h"

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

PERFETTO_DEFINE_CATEGORIES(
    perfetto::Category("app").SetDescription("The app's frames"),
    perfetto::Category("app.debug").SetTags("debug").SetDescription("Verbose ticks"));

PERFETTO_TRACK_EVENT_STATIC_STORAGE();

namespace {

// Tells when a session starts and stops track_event in this process.
class Observer : public perfetto::TrackEventSessionObserver {
 public:
  Observer() { perfetto::TrackEvent::AddSessionObserver(this); }
  ~Observer() override { perfetto::TrackEvent::RemoveSessionObserver(this); }

  void OnStart(const perfetto::DataSourceBase::StartArgs&) override {
    std::lock_guard<std::mutex> lock(mutex_);
    started_ = true;
    cv_.notify_all();
  }
  void OnStop(const perfetto::DataSourceBase::StopArgs&) override {
    std::lock_guard<std::mutex> lock(mutex_);
    stopped_ = true;
    cv_.notify_all();
  }
  void AwaitStart() {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [this] { return started_; });
  }
  bool AwaitStop(std::chrono::seconds timeout) {
    std::unique_lock<std::mutex> lock(mutex_);
    return cv_.wait_for(lock, timeout, [this] { return stopped_; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool started_ = false;
  bool stopped_ = false;
};

struct Options {
  int threads = 3;
  int iterations = 2000;
  int pause_us = 10;
  double rate = 0;  // iterations per second per thread; 0: pause_us after every 100
  bool exit_after_flush = false;
};

void Work(const Options& options, int thread) {
  using Clock = std::chrono::steady_clock;
  const std::string counter = "counter t" + std::to_string(thread);
  const auto start = Clock::now();
  char step[32];
  for (int i = 0; i < options.iterations; i++) {
    {
      TRACE_EVENT("app", "frame", "i", i);
      std::snprintf(step, sizeof step, "step %d", i % 16);
      TRACE_EVENT("app", perfetto::DynamicString(step));
      TRACE_COUNTER("app", perfetto::DynamicString(counter), i);
      TRACE_EVENT_INSTANT("app.debug", "tick");
    }
    if (i % 100 == 99) {
      if (options.rate > 0) {
        std::this_thread::sleep_until(
            start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>((i + 1) / options.rate)));
      } else if (options.pause_us > 0) {
        std::this_thread::sleep_for(std::chrono::microseconds(options.pause_us));
      }
    }
  }
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
    else if (!std::strcmp(arg, "--pause-us")) options->pause_us = std::atoi(value);
    else if (!std::strcmp(arg, "--rate")) options->rate = std::atof(value);
    else return false;
    i++;
  }
  return options->threads > 0 && options->iterations > 0 && options->pause_us >= 0 && options->rate >= 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  if (!Parse(argc, argv, &options)) {
    std::fprintf(stderr,
                 "usage: %s [--threads N] [--iterations N] [--pause-us N] [--rate R] [--exit-after-flush]\n",
                 argv[0]);
    return 2;
  }
  perfetto::TracingInitArgs args;
  args.backends = perfetto::kSystemBackend;
  perfetto::Tracing::Initialize(args);
  perfetto::TrackEvent::Register();

  Observer observer;
  observer.AwaitStart();
  std::printf("started\n");
  std::fflush(stdout);

  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < options.threads; t++) threads.emplace_back(Work, std::cref(options), t);
  for (auto& thread : threads) thread.join();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  perfetto::TrackEvent::Flush();
  std::printf("done %d %d %.3f\n", options.threads, options.iterations, seconds);
  std::fflush(stdout);
  if (!options.exit_after_flush && !observer.AwaitStop(std::chrono::seconds(60))) {
    std::fprintf(stderr, "the session did not stop within 60 s\n");
    return 1;
  }
  return 0;
}
