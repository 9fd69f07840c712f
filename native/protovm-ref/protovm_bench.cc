// Times Perfetto's own C++ ProtoVM on the workload of ffmtrace's ProtoVmBenchmark (bench/),
// so the two can be compared in one session: the incremental-trace program (delete, merge
// and set elements by id) on a state of 1,000 elements, one patch at a time, the element
// rotating over all of them. Built -O3 as Perfetto's Linux release builds by
// scripts/build-protovm-ref; run alternated with the JMH benchmark:
//   protovm_bench [ROUNDS] [PATCHES_PER_ROUND]
// Prints one line per workload: the median and the spread of ns per patch over the rounds.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "src/protovm/vm.h"

namespace {

using Bytes = std::string;

Bytes Varint(uint64_t v) {
  Bytes out;
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
  return out;
}

Bytes VarintField(uint32_t id, uint64_t v) { return Varint(id << 3) + Varint(v); }
Bytes BytesField(uint32_t id, const Bytes& b) { return Varint(id << 3 | 2) + Varint(b.size()) + b; }

// One third of SamplePrograms::IncrementalTraceInstructions, as ProtoVmBenchmark encodes it.
Bytes Keyed(uint32_t src_field, uint32_t op, bool create) {
  Bytes reg_load = BytesField(2, VarintField(2, 0));
  Bytes load = src_field == 1 ? reg_load
                              : BytesField(1, BytesField(2, VarintField(1, 1))) + BytesField(7, reg_load);
  Bytes dst_select = VarintField(1, 2) + BytesField(2, VarintField(1, 1)) +
                     BytesField(2, VarintField(3, 1) + VarintField(6, 0)) + VarintField(3, create ? 1 : 0);
  Bytes dst = BytesField(1, dst_select) + BytesField(7, BytesField(op, ""));
  Bytes src_select = BytesField(2, VarintField(1, src_field) + VarintField(5, 1));
  return BytesField(1, src_select) + BytesField(7, load) + BytesField(7, dst);
}

Bytes Element(uint32_t id, uint32_t value) { return VarintField(1, id) + VarintField(2, value); }

protozero::ConstBytes View(const Bytes& b) {
  return {reinterpret_cast<const uint8_t*>(b.data()), b.size()};
}

constexpr int kElements = 1000;

}  // namespace

int main(int argc, char** argv) {
  int rounds = argc > 1 ? std::atoi(argv[1]) : 5;
  int per_round = argc > 2 ? std::atoi(argv[2]) : 1000000;
  Bytes program = VarintField(1, 1) + BytesField(2, Keyed(1, 5, false)) + BytesField(2, Keyed(2, 3, true)) +
                  BytesField(2, Keyed(3, 4, true));
  Bytes state;
  std::vector<Bytes> sets, merges, delete_then_sets;
  for (int id = 0; id < kElements; id++) {
    state += BytesField(1, Element(id, id));
    sets.push_back(BytesField(3, Element(id, id + 1)));
    merges.push_back(BytesField(2, Element(id, id + 2)));
    delete_then_sets.push_back(VarintField(1, id) + BytesField(3, Element(id, id + 3)));
  }
  struct Workload {
    const char* name;
    const std::vector<Bytes>* patches;
  } workloads[] = {{"setElement", &sets}, {"mergeElement", &merges}, {"deleteThenSetElement", &delete_then_sets}};
  for (const Workload& w : workloads) {
    perfetto::protovm::Vm vm(View(program), 64u << 20, View(state));
    // Decode the state once, as a running VM has, and warm up.
    for (const Bytes& p : sets) vm.ApplyPatch(View(p));
    for (int i = 0; i < per_round; i++) vm.ApplyPatch(View((*w.patches)[i % kElements]));
    std::vector<double> ns;
    int failures = 0;
    for (int r = 0; r < rounds; r++) {
      auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < per_round; i++) {
        failures += !vm.ApplyPatch(View((*w.patches)[i % kElements])).IsOk();
      }
      auto end = std::chrono::steady_clock::now();
      ns.push_back(std::chrono::duration<double, std::nano>(end - start).count() / per_round);
    }
    std::sort(ns.begin(), ns.end());
    std::printf("protovm_bench %s: median %.1f ns/patch (min %.1f, max %.1f, %d rounds of %d)%s\n", w.name,
                ns[ns.size() / 2], ns.front(), ns.back(), rounds, per_round, failures ? " NOT OK" : "");
  }
  return 0;
}
