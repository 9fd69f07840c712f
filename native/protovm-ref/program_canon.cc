// Reference for the bytes traced keeps of a producer's ProtoVM program, linked from an
// external Perfetto checkout by scripts/build-protovm-ref. traced holds the program as a
// cppgen VmProgram (a field of the DataSourceDescriptor) and hands the VM, and the trace,
// its re-serialisation; this runner does exactly that, so the Java canonicaliser can be
// compared with it byte for byte.
//
//   program_canon < HEX_LINES
//
// Each input line is one program in hex; each output line is its re-serialisation in
// hex. A line may hold several programs separated by ',': they are parsed into the same
// object one after the other, as a descriptor carrying the field more than once is.

#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "protos/perfetto/protovm/vm_program.gen.h"

namespace {

int Nibble(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  return -1;
}

bool FromHex(const std::string& hex, std::string* out) {
  if (hex.size() % 2)
    return false;
  out->clear();
  for (size_t i = 0; i < hex.size(); i += 2) {
    int hi = Nibble(hex[i]), lo = Nibble(hex[i + 1]);
    if (hi < 0 || lo < 0)
      return false;
    out->push_back(static_cast<char>(hi << 4 | lo));
  }
  return true;
}

std::string ToHex(const std::string& bytes) {
  static const char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned char c : bytes) {
    hex.push_back(kHex[c >> 4]);
    hex.push_back(kHex[c & 0xf]);
  }
  return hex;
}

}  // namespace

int main() {
  std::string line;
  while (std::getline(std::cin, line)) {
    perfetto::protos::gen::VmProgram program;
    size_t start = 0;
    while (true) {
      size_t comma = line.find(',', start);
      std::string bytes;
      if (!FromHex(line.substr(start, comma == std::string::npos ? std::string::npos : comma - start),
                   &bytes)) {
        std::fprintf(stderr, "program_canon: bad hex line\n");
        return 2;
      }
      // The return value is ignored, as the enclosing descriptor's parser ignores it.
      program.ParseFromArray(bytes.data(), bytes.size());
      if (comma == std::string::npos)
        break;
      start = comma + 1;
    }
    std::printf("%s\n", ToHex(program.SerializeAsString()).c_str());
    std::fflush(stdout);
  }
  return 0;
}
