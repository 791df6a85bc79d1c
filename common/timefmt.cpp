#include "common/timefmt.h"

#include <chrono>
#include <cstdio>
#include <ctime>

namespace common {

std::string FormatRfc3339(int64_t unix_ns) {
  int64_t secs = unix_ns / 1'000'000'000;
  int64_t ms = (unix_ns % 1'000'000'000) / 1'000'000;
  if (ms < 0) {
    ms += 1000;
    secs -= 1;
  }
  std::time_t t = static_cast<std::time_t>(secs);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[96];
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  return buf;
}

std::string HumanSeconds(double seconds) {
  if (seconds < 0) seconds = 0;
  auto s = static_cast<int64_t>(seconds + 0.5);
  char buf[32];
  if (s < 60)
    std::snprintf(buf, sizeof(buf), "%llds", static_cast<long long>(s));
  else if (s < 3600)
    std::snprintf(buf, sizeof(buf), "%lldm%02llds", static_cast<long long>(s / 60),
                  static_cast<long long>(s % 60));
  else if (s < 86400)
    std::snprintf(buf, sizeof(buf), "%lldh%02lldm", static_cast<long long>(s / 3600),
                  static_cast<long long>(s % 3600 / 60));
  else
    std::snprintf(buf, sizeof(buf), "%lldd%02lldh", static_cast<long long>(s / 86400),
                  static_cast<long long>(s % 86400 / 3600));
  return buf;
}

int64_t NowUnixNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace common
