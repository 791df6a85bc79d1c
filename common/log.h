// Logging set-up: spdlog to stderr, as text or one JSON object per line.
//
// SetUpLogging() is called once by main() before any thread starts; afterwards spdlog's default
// logger is thread-safe and every file logs through spdlog::info() and friends.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace common {

// level: trace|debug|info|warn|error|critical|off; format: text|json. Both already validated.
void SetUpLogging(const std::string& service, const std::string& level, const std::string& format);

// Escapes a string for a JSON string literal (no surrounding quotes).
std::string JsonEscape(const std::string& s);

// Which repeats of one event to log (e.g. a failed connect every 500 ms for hours): the first
// `first` occurrences, then at most one per `every`, which says how many were left out since
// the last line. Pure and clock-injected; not thread-safe (the caller serialises).
class LogLimiter {
 public:
  LogLimiter(int first, std::chrono::milliseconds every) : first_(first), every_(every) {}
  // True when this occurrence is to be logged; *suppressed is then the number left out since
  // the last logged one.
  bool Allow(std::chrono::steady_clock::time_point now, int64_t* suppressed);
  void Reset() { *this = LogLimiter(first_, every_); }

 private:
  int first_;
  std::chrono::milliseconds every_;
  int64_t seen_ = 0;
  int64_t suppressed_ = 0;
  std::chrono::steady_clock::time_point last_{};
};

// The tail of a limited line: "" when nothing was left out, else " (N more like it not logged)".
std::string LeftOut(int64_t suppressed);

}  // namespace common
