// Time formatting for operator output. Pure, thread-safe.
#pragma once

#include <cstdint>
#include <string>

namespace common {

// RFC 3339 in UTC with milliseconds: 2026-11-29T16:10:13.123Z.
std::string FormatRfc3339(int64_t unix_ns);
// Seconds as a short human duration: "0s", "42s", "3m12s", "5h02m", "3d04h".
std::string HumanSeconds(double seconds);
int64_t NowUnixNs();

}  // namespace common
