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

namespace {

// Exactly n digits at s[*pos], moving past them; false when they are not there.
bool TimeDigits(std::string_view s, size_t* pos, size_t n, int* out) {
  if (*pos + n > s.size()) return false;
  int v = 0;
  for (size_t i = 0; i < n; ++i) {
    const char c = s[*pos + i];
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *pos += n;
  *out = v;
  return true;
}

bool TimeChar(std::string_view s, size_t* pos, char c) {
  if (*pos >= s.size() || s[*pos] != c) return false;
  ++*pos;
  return true;
}

}  // namespace

std::optional<int64_t> ParseRfc3339(std::string_view s, Rfc3339Form form) {
  size_t pos = 0;
  int year = 0, mon = 0, day = 0, hour = 0, min = 0, sec = 0;
  if (!TimeDigits(s, &pos, 4, &year) || !TimeChar(s, &pos, '-') || !TimeDigits(s, &pos, 2, &mon) ||
      !TimeChar(s, &pos, '-') || !TimeDigits(s, &pos, 2, &day)) {
    return std::nullopt;
  }
  int64_t frac_ns = 0;
  int64_t offset_s = 0;
  if (pos < s.size() || !form.day_alone) {
    const bool t = pos < s.size() && (s[pos] == 'T' || s[pos] == 't');
    if (!t && !(form.space_for_t && pos < s.size() && s[pos] == ' ')) return std::nullopt;
    ++pos;
    if (!TimeDigits(s, &pos, 2, &hour) || !TimeChar(s, &pos, ':') ||
        !TimeDigits(s, &pos, 2, &min) || !TimeChar(s, &pos, ':') || !TimeDigits(s, &pos, 2, &sec)) {
      return std::nullopt;
    }
    if (pos < s.size() && s[pos] == '.') {
      ++pos;
      int64_t scale = 100'000'000;
      const size_t start = pos;
      while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
        frac_ns += (s[pos] - '0') * scale;
        scale /= 10;
        ++pos;
      }
      if (pos == start) return std::nullopt;
    }
    if (pos >= s.size()) return std::nullopt;  // a time of day needs its zone
    if (s[pos] == 'Z' || s[pos] == 'z') {
      ++pos;
    } else if (s[pos] == '+' || s[pos] == '-') {
      const int sign = s[pos] == '-' ? -1 : 1;
      ++pos;
      int oh = 0, om = 0;
      if (!TimeDigits(s, &pos, 2, &oh) || !TimeChar(s, &pos, ':') || !TimeDigits(s, &pos, 2, &om) ||
          oh > 23 || om > 59) {
        return std::nullopt;
      }
      offset_s = sign * (oh * 3600 + om * 60);
    } else {
      return std::nullopt;
    }
    if (pos != s.size()) return std::nullopt;
  }
  if (mon < 1 || mon > 12 || day < 1 || day > 31 || hour > 23 || min > 59 || sec > 60) {
    return std::nullopt;
  }
  if (form.before_epoch_is_zero && year < 1970) return 0;
  // Unix nanoseconds in 64 bits run from September 1677 to April 2262; beyond, the
  // multiplication below overflows (tests/fuzz found year 6220 in a JetStream answer).
  if (year < 1678 || year > 2261) return std::nullopt;
  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = mon - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = min;
  tm.tm_sec = sec;
  const std::time_t t = timegm(&tm);
  if (tm.tm_mday != day) return std::nullopt;  // 2026-02-30, normalised to March
  return (static_cast<int64_t>(t) - offset_s) * 1'000'000'000 + frac_ns;
}

int64_t NowUnixNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace common
