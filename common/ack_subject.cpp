#include "common/ack_subject.h"

#include <charconv>
#include <limits>

namespace common::ack_subject {

namespace {

constexpr std::string_view kPrefix = "$JS.ACK.";
constexpr size_t kV1Tokens = 7;     // after the prefix
constexpr size_t kV2MinTokens = 9;  // after the prefix
constexpr size_t kMaxTokens = 16;   // v2 allows extension tokens; more is no ack subject

bool Digits(std::string_view s, uint64_t* out) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

}  // namespace

std::optional<Meta> Parse(std::string_view reply) {
  if (reply.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  std::string_view rest = reply.substr(kPrefix.size());
  std::string_view tokens[kMaxTokens];
  size_t n = 0;
  while (true) {
    if (n == kMaxTokens) return std::nullopt;
    const size_t dot = rest.find('.');
    tokens[n] = rest.substr(0, dot);
    if (tokens[n].empty()) return std::nullopt;
    ++n;
    if (dot == std::string_view::npos) break;
    rest.remove_prefix(dot + 1);
  }
  Meta m;
  size_t at = 0;
  if (n == kV1Tokens) {
    m.format = 1;
  } else if (n >= kV2MinTokens) {
    m.format = 2;
    m.domain = tokens[0];
    at = 2;  // the account hash is of no use to us
  } else {
    return std::nullopt;
  }
  m.stream = tokens[at];
  m.consumer = tokens[at + 1];
  uint64_t ts = 0;
  if (!Digits(tokens[at + 2], &m.delivered) || !Digits(tokens[at + 3], &m.stream_seq) ||
      !Digits(tokens[at + 4], &m.consumer_seq) || !Digits(tokens[at + 5], &ts) ||
      !Digits(tokens[at + 6], &m.pending)) {
    return std::nullopt;
  }
  if (ts > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
  m.timestamp_ns = static_cast<int64_t>(ts);
  return m;
}

}  // namespace common::ack_subject
