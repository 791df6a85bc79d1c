// Logging set-up: spdlog to stderr, as text or one JSON object per line.
//
// SetUpLogging() is called once by main() before any thread starts; afterwards spdlog's default
// logger is thread-safe and every file logs through spdlog::info() and friends.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace common {

// level: trace|debug|info|warn|error|critical|off; format: text|json. Both already validated.
void SetUpLogging(const std::string& service, const std::string& level, const std::string& format);

// Escapes a string for a JSON string literal (no surrounding quotes). Bytes that are not valid
// UTF-8 become U+FFFD, so a line stays valid JSON whatever reached it.
std::string JsonEscape(const std::string& s);

namespace log {

// A value that came from a message or from another server's answer (a subject, Content-Type, a
// header, a message id, Umami's answer, a reason built from those), made safe for a log line:
// printable ASCII (0x20..0x7e) is kept, a backslash is doubled, any other byte (control
// characters, ESC, DEL, UTF-8) becomes \xNN, so a terminal reading the log is never driven by
// it and the line cannot be split or forged. At most `max` input bytes are shown; a longer value
// ends in "...(N bytes)". Every such value passes through this before it reaches spdlog.
std::string Escaped(std::string_view value, size_t max = 200);

}  // namespace log

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
