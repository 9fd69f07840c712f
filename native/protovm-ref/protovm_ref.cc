// Reference runner over Perfetto's own C++ ProtoVM (src/protovm), linked from an
// external Perfetto checkout by scripts/build-protovm-ref. It exists so the Java port
// can be compared byte for byte with the C++: same program, limit, state and patches
// in, same status, memory and state bytes out.
//
//   protovm_ref PROGRAM LIMIT_BYTES STATE|- PATCH...
//
// All files are raw binary; STATE "-" starts without an initial state (the VM's
// default argument), whereas an empty file starts from an empty Bytes root.
// Output, one line each (flushed per line, so the lines before a crash survive):
//   init mem=N state=HEX
//   patch[I] FILE status=OK|ERROR|ABORT mem=N state=HEX
//     | <abort stack line>          (after an ABORT, one per stack entry)
//   clone mem=N state=HEX           (a read-only clone after the last patch)

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>

#include "perfetto/protozero/message.h"
#include "perfetto/protozero/scattered_heap_buffer.h"
#include "src/protovm/vm.h"

namespace {

using perfetto::protovm::StatusOr;
using perfetto::protovm::Vm;

bool ReadFile(const char* path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return false;
  out->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return !in.bad();
}

protozero::ConstBytes AsBytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

// The state as traced and the trace processor see it: SerializeIncrementalState
// into a protozero message, then its bytes.
std::string StateHex(const Vm& vm) {
  protozero::HeapBuffered<protozero::Message> msg;
  vm.SerializeIncrementalState(msg.get());
  std::string bytes = msg.SerializeAsString();
  static const char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    hex.push_back(kHex[c >> 4]);
    hex.push_back(kHex[c & 0xf]);
  }
  return hex;
}

// Flushes before serialising: a Scalar root crashes there, and the status and
// memory already printed on the line should survive it.
void PrintVm(const Vm& vm) {
  std::printf("mem=%llu state=",
              static_cast<unsigned long long>(vm.GetMemoryUsageBytes()));
  std::fflush(stdout);
  std::printf("%s\n", StateHex(vm).c_str());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s PROGRAM LIMIT_BYTES STATE|- PATCH...\n", argv[0]);
    return 2;
  }
  std::string program;
  if (!ReadFile(argv[1], &program)) {
    std::fprintf(stderr, "protovm_ref: cannot read program %s\n", argv[1]);
    return 2;
  }
  char* end = nullptr;
  unsigned long long limit = std::strtoull(argv[2], &end, 10);
  if (!*argv[2] || *end) {
    std::fprintf(stderr, "protovm_ref: bad LIMIT_BYTES %s\n", argv[2]);
    return 2;
  }
  // Kept alive for the VM's lifetime: the VM copies it into a Bytes node, but
  // keeping it costs nothing and avoids relying on that.
  std::string state;
  bool has_state = std::string(argv[3]) != "-";
  if (has_state && !ReadFile(argv[3], &state)) {
    std::fprintf(stderr, "protovm_ref: cannot read state %s\n", argv[3]);
    return 2;
  }
  // A non-null pointer even for an empty file: the VM tests data, not size.
  static const uint8_t kEmpty = 0;
  protozero::ConstBytes initial{nullptr, 0};
  if (has_state)
    initial = state.empty() ? protozero::ConstBytes{&kEmpty, 0} : AsBytes(state);

  Vm vm(AsBytes(program), static_cast<size_t>(limit), initial);
  std::printf("init ");
  PrintVm(vm);

  for (int i = 4; i < argc; i++) {
    std::string patch;
    if (!ReadFile(argv[i], &patch)) {
      std::fprintf(stderr, "protovm_ref: cannot read patch %s\n", argv[i]);
      return 2;
    }
    StatusOr<void> status = vm.ApplyPatch(AsBytes(patch));
    const char* name = status.IsOk() ? "OK" : status.IsError() ? "ERROR" : "ABORT";
    std::printf("patch[%d] %s status=%s ", i - 4, argv[i], name);
    PrintVm(vm);
    if (status.IsAbort()) {
      for (const std::string& line : status.stacktrace())
        std::printf("  | %s\n", line.c_str());
      std::fflush(stdout);
    }
  }

  std::unique_ptr<Vm> clone = vm.CloneReadOnly();
  std::printf("clone ");
  PrintVm(*clone);
  return 0;
}
