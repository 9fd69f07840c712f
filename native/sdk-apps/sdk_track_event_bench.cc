// The C++ side of scripts/bench-vs-perfetto's facade rows: Perfetto's C++ SDK writing the
// TrackEvents that bench/TrackEventFacadeBenchmark writes through ffmtrace's facade, in
// the setting of Perfetto's own src/tracing/api_benchmark.cc (in-process backend, one
// session, a 1 MiB buffer, the SDK's default BufferExhaustedPolicy::kDrop, a compiler
// barrier after each event), for the events api_benchmark has no row of (scoped slices,
// instants, run-time names). A timed loop: each workload warms up for
// ROUND_MS, then runs ROUNDS rounds of ROUND_MS and prints one line
//   <workload> <median ns/op> <min> <max>
// over the rounds' ns/op. Workloads:
//   scoped_slice_dynamic  TRACE_EVENT("benchmark", DynamicString{name}): begin and end, the
//                         name made at run time (as the Java rows' String name is)
//   scoped_slice_static   TRACE_EVENT("benchmark", "Event"): begin and end, a literal name
//   instant_dynamic       TRACE_EVENT_INSTANT("benchmark", DynamicString{name})
//   begin_basic           TRACE_EVENT_BEGIN("benchmark", "Event"): api_benchmark's
//                         BM_TracingTrackEventBasic
//   begin_debug_annotation TRACE_EVENT_BEGIN("benchmark", "Event", "value", 42):
//                         BM_TracingTrackEventDebugAnnotations
//   unrecorded_slice      TRACE_EVENT in a "debug"-tagged category the session does not
//                         record (the Java row facadeUnrecorded)
//
// Built by ../shared/tools/build-perfetto-sdk-app.sh:
//   build-perfetto-sdk-app.sh /tmp/perfetto-ref native/sdk-apps/sdk_track_event_bench.cc -o BIN
// Usage: BIN [ROUNDS [ROUND_MS]]   (defaults 5 and 1000)

#include "perfetto/tracing/tracing.h"
#include "perfetto/tracing/core/trace_config.h"
#include "perfetto/tracing/track_event.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

PERFETTO_DEFINE_CATEGORIES(
    perfetto::Category("benchmark"),
    perfetto::Category("unrecorded").SetTags("debug"));

PERFETTO_TRACK_EVENT_STATIC_STORAGE();

namespace {

// google-benchmark's ClobberMemory: the event's stores cannot be optimized away.
inline void Clobber() { asm volatile("" : : : "memory"); }

using Clock = std::chrono::steady_clock;

// Runs body in batches until round_ms passed; returns ns per call.
template <typename Body>
double Round(int round_ms, Body body) {
  const auto start = Clock::now();
  const auto until = start + std::chrono::milliseconds(round_ms);
  long calls = 0;
  auto now = start;
  do {
    for (int i = 0; i < 1000; i++) {
      body();
      Clobber();
    }
    calls += 1000;
    now = Clock::now();
  } while (now < until);
  return std::chrono::duration<double, std::nano>(now - start).count() / calls;
}

template <typename Body>
void Measure(const char* workload, int rounds, int round_ms, Body body) {
  Round(round_ms, body);  // warm-up
  std::vector<double> ns;
  for (int r = 0; r < rounds; r++) ns.push_back(Round(round_ms, body));
  std::sort(ns.begin(), ns.end());
  std::printf("%s %.2f %.2f %.2f\n", workload, ns[ns.size() / 2], ns.front(), ns.back());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 5;
  const int round_ms = argc > 2 ? std::atoi(argv[2]) : 1000;
  if (rounds < 1 || round_ms < 1) {
    std::fprintf(stderr, "usage: %s [ROUNDS [ROUND_MS]]\n", argv[0]);
    return 2;
  }
  perfetto::TracingInitArgs args;
  args.backends = perfetto::kInProcessBackend;
  perfetto::Tracing::Initialize(args);
  perfetto::TrackEvent::Register();

  perfetto::TraceConfig config;
  config.add_buffers()->set_size_kb(1024);
  config.add_data_sources()->mutable_config()->set_name("track_event");
  auto session = perfetto::Tracing::NewTrace(perfetto::kInProcessBackend);
  session->Setup(config);
  session->StartBlocking();

  // Made at run time, as the Java benchmark's name field is.
  const std::string name = std::string("Event from a ") + "string";
  Measure("scoped_slice_dynamic", rounds, round_ms,
          [&] { TRACE_EVENT("benchmark", perfetto::DynamicString{name}); });
  Measure("scoped_slice_static", rounds, round_ms, [] { TRACE_EVENT("benchmark", "Event"); });
  Measure("instant_dynamic", rounds, round_ms,
          [&] { TRACE_EVENT_INSTANT("benchmark", perfetto::DynamicString{name}); });
  Measure("begin_basic", rounds, round_ms, [] { TRACE_EVENT_BEGIN("benchmark", "Event"); });
  Measure("begin_debug_annotation", rounds, round_ms,
          [] { TRACE_EVENT_BEGIN("benchmark", "Event", "value", 42); });
  Measure("unrecorded_slice", rounds, round_ms,
          [&] { TRACE_EVENT("unrecorded", perfetto::DynamicString{name}); });

  session->StopBlocking();
  if (session->ReadTraceBlocking().empty()) {
    std::fprintf(stderr, "the session recorded nothing\n");
    return 1;
  }
  return 0;
}
