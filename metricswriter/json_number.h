// JSON number text to C++ numbers, for every spelling JSON allows: the OTLP/JSON decoder reads
// a double field from any JSON number (integer literals beyond 64 bits included, which
// simdjson 3.0.1 leaves to the caller) and a 64-bit integer field from any number or decimal
// string whose value is a whole number in range (1e3 and 5.0 are 1000 and 5, exactly).
// Pure; safe from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace mw::json {

// Whether s is exactly one JSON number (RFC 8259: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?).
bool IsNumber(std::string_view s);

// The double nearest to the JSON number s (round to nearest even), as IEEE 754 rounds: beyond
// the largest double it is ±infinity, below the smallest subnormal ±0. s must be IsNumber.
double ToDouble(std::string_view s);

enum class IntFit { kOk, kNotWhole, kNegative, kOutOfRange };

// The exact value of the JSON number s as a 64-bit integer; s must be IsNumber.
IntFit ToInt64(std::string_view s, int64_t* out);
IntFit ToUint64(std::string_view s, uint64_t* out);  // kNegative below zero ("-0" is 0)

// The common spelling, fast: 1 to 19 decimal digits without a leading zero (always in range).
inline bool PlainUint64(std::string_view s, uint64_t* out) {
  if (s.empty() || s.size() > 19 || (s[0] == '0' && s.size() > 1)) return false;
  uint64_t v = 0;
  for (char c : s) {
    const auto d = static_cast<unsigned>(c - '0');
    if (d > 9) return false;
    v = v * 10 + d;
  }
  *out = v;
  return true;
}

// At most 40 characters of s, for an error message that may reach a log line or a header:
// anything but printable ASCII (and '"', '\') becomes '?', and a cut is marked with "...".
std::string Excerpt(std::string_view s);

}  // namespace mw::json
