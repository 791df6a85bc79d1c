#include "common/crash_guard.h"

#include <unistd.h>

#include <charconv>
#include <chrono>

namespace common::crash_guard {
namespace {

constexpr size_t kMaxInstance = 128;

std::string Printable(std::string_view s, size_t max) {
  std::string out;
  for (unsigned char c : s.substr(0, max)) out += (c < 0x20 || c >= 0x7f) ? '?' : char(c);
  if (s.size() > max) out += "...";
  return out;
}

template <typename T>
bool Number(std::string_view s, T* out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

}  // namespace

std::string Encode(const Marker& m) {
  std::string out = std::to_string(m.delivery) + " " + std::to_string(m.unix_ms) + " " +
                    Printable(m.instance, kMaxInstance);
  if (!m.process.empty() || m.stops != 0) out += "\t" + Printable(m.process, kMaxInstance);
  if (m.stops != 0) out += "\t" + std::to_string(m.stops);
  return out;
}

std::optional<Marker> Decode(std::string_view value) {
  const size_t a = value.find(' ');
  if (a == std::string_view::npos) return std::nullopt;
  const size_t b = value.find(' ', a + 1);
  if (b == std::string_view::npos) return std::nullopt;
  Marker m;
  if (!Number(value.substr(0, a), &m.delivery) ||
      !Number(value.substr(a + 1, b - a - 1), &m.unix_ms)) {
    return std::nullopt;
  }
  std::string_view rest = value.substr(b + 1);
  if (const size_t tab = rest.find('\t'); tab != std::string_view::npos) {
    std::string_view process = rest.substr(tab + 1);
    rest = rest.substr(0, tab);
    if (const size_t t2 = process.find('\t'); t2 != std::string_view::npos) {
      if (!Number(process.substr(t2 + 1), &m.stops)) return std::nullopt;
      process = process.substr(0, t2);
    }
    m.process = std::string(process);
    if (m.process.size() > kMaxInstance + 3) return std::nullopt;
  }
  m.instance = std::string(rest);
  if (m.instance.size() > kMaxInstance + 3) return std::nullopt;
  return m;
}

std::string Key(std::string_view durable, uint64_t stream_seq) {
  return std::string(durable) + "." + std::to_string(stream_seq);
}

Decision Decide(uint64_t num_delivered, const std::optional<std::string>& found,
                std::string_view this_process) {
  if (num_delivered <= 1) return {Step::kRead, 0, false};
  if (!found) return {Step::kMarkThenRead, 0, false};
  const auto m = Decode(*found);
  if (m && !m->process.empty() && m->process == this_process) {
    return {Step::kMarkThenRead, m->stops, false};
  }
  // Saturating: a count near the type's end is no count a reader wrote.
  const uint32_t stops = m ? (m->stops >= kStoppedReaders ? kStoppedReaders : m->stops + 1) : 1;
  return {stops >= kStoppedReaders ? Step::kDeadLetter : Step::kMarkThenRead, stops, true};
}

std::string ThisProcess() {
  static const std::string token =
      std::to_string(getpid()) + "@" +
      std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count());
  return token;
}

std::string Detail(std::string_view marker, uint64_t num_delivered) {
  std::string out = "delivery " + std::to_string(num_delivered) + "; ";
  if (auto m = Decode(marker)) {
    out += "instance " + Printable(m->instance, kMaxInstance) + " began reading delivery " +
           std::to_string(m->delivery) + " at unix ms " + std::to_string(m->unix_ms) +
           " and never finished";
    if (m->stops != 0) {
      out += "; " + std::to_string(m->stops) + " reader" + (m->stops == 1 ? "" : "s") +
             " stopped on it before";
    }
    return out;
  }
  return out + "an unreadable marker: " + Printable(marker, 64);
}

}  // namespace common::crash_guard
