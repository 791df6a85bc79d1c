// Time formatting for operator output. Pure, thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace common {

// RFC 3339 in UTC with milliseconds: 2026-11-29T16:10:13.123Z.
std::string FormatRfc3339(int64_t unix_ns);
// Seconds as a short human duration: "0s", "42s", "3m12s", "5h02m", "3d04h".
std::string HumanSeconds(double seconds);
int64_t NowUnixNs();

// What ParseRfc3339 takes besides a whole RFC 3339 time. An operator's input: a day alone (its
// midnight, UTC) and a space for the 'T'. JetStream's answers: neither, and any time before
// 1970 (Go's zero time, 0001-01-01T00:00:00Z, means "never") reads as 0.
struct Rfc3339Form {
  bool day_alone = false;
  bool space_for_t = false;
  bool before_epoch_is_zero = false;
};

// An RFC 3339 time (2026-11-29T16:10:13.25+02:00: the fraction of any length, read to the
// nanosecond; 'T' and 'Z' in either case) as Unix nanoseconds. nullopt when the text is none, or
// when the time lies outside what 64-bit Unix nanoseconds hold (the years 1678 to 2261 do).
std::optional<int64_t> ParseRfc3339(std::string_view text, Rfc3339Form form = {});

}  // namespace common
