// What the fuzz targets (tests/fuzz) check beyond "no crash, no sanitizer report": the invariants
// the code downstream of a decoder relies on. A failed check traps, so libFuzzer keeps the input
// and the corpus replay (replay_main.cpp) fails on it.
#pragma once

#include <string_view>

namespace fuzz {

[[noreturn]] inline void Fail() { __builtin_trap(); }
inline void Check(bool ok) {
  if (!ok) Fail();
}

// A value that may go into a NATS or HTTP header, or a log line, as it is: no CR, LF, NUL or
// other control byte (a header value holding CRLF would let its sender add headers).
inline bool HeaderSafe(std::string_view s) {
  for (unsigned char c : s) {
    if (c < 0x20 || c == 0x7f) return false;
  }
  return true;
}

// The input split at its first byte (a selector of what to try) and the rest.
struct Split {
  unsigned char selector = 0;
  std::string_view rest;
};
inline Split Select(const unsigned char* data, size_t size) {
  if (size == 0) return {};
  return {data[0], std::string_view(reinterpret_cast<const char*>(data) + 1, size - 1)};
}

}  // namespace fuzz
