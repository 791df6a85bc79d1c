// A protobuf wire-format walker for the OTLP metrics messages: finds where and why a body is not
// a valid ExportMetricsServiceRequest, so a dead-letter reason can name the byte. Used only after
// libprotobuf refused a body. Pure; safe from any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace mw::wire {

struct Fault {
  size_t offset = 0;  // byte offset in the body
  std::string what;   // e.g. "truncated varint"
};

// The first fault found walking `body` as an ExportMetricsServiceRequest (recursing into every
// sub-message the OTLP schema declares, and checking that strings are UTF-8), or nullopt.
std::optional<Fault> FindFault(std::string_view body);

// Whether s is well-formed UTF-8 (no overlongs, no surrogates, at most U+10FFFF).
bool ValidUtf8(std::string_view s);

}  // namespace mw::wire
