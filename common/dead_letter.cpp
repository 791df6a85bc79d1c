#include "common/dead_letter.h"

#include <algorithm>
#include <cctype>

#include "common/topology.h"

namespace common::dead_letter {
namespace {

bool ValidToken(std::string_view t) {
  if (t.empty()) return false;
  for (char c : t) {
    if (c == '.' || c == '*' || c == '>' || c == ' ' || c == '\t' || c == '\r' || c == '\n') {
      return false;
    }
  }
  return true;
}

std::string KeyAfter(std::string_view subject, std::string_view prefix) {
  std::string_view key = subject.substr(prefix.size());
  return ValidToken(key) ? std::string(key) : "_invalid";
}

}  // namespace

std::string DlqSubjectFor(std::string_view subject) {
  std::string_view web = topology::kWebEventsSubjectPrefix;
  std::string_view api = topology::kApiMetricsSubjectPrefix;
  if (subject.substr(0, web.size()) == web) {
    return topology::kWebDlqSubjectPrefix + KeyAfter(subject, web);
  }
  if (subject.substr(0, api.size()) == api) {
    return topology::kApiDlqSubjectPrefix + KeyAfter(subject, api);
  }
  return "";
}

std::string DlqStreamFor(std::string_view stream) {
  if (stream == topology::kWebEvents) return topology::kWebDlq;
  if (stream == topology::kApiMetrics) return topology::kApiDlq;
  return "";
}

namespace {

// At most `max` bytes of s, cut back to a UTF-8 boundary.
std::string Cut(std::string_view s, size_t max) {
  if (s.size() <= max) return std::string(s);
  size_t n = max;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return std::string(s.substr(0, n));
}

// Header values are one line of text: a reason or detail with a line break would corrupt the
// frame, and one with another control byte (NUL ends nats.c's C string; ESC drives a terminal)
// would reach whoever reads it. Reasons and details quote what clients and Umami sent.
std::string OneLine(std::string s) {
  for (char& c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) c = ' ';
  }
  return s;
}

std::string CutSubject(std::string_view subject) {
  if (subject.size() <= kMaxSubjectBytes) return std::string(subject);
  const std::string_view mark = kTruncatedMark;
  return Cut(subject, kMaxSubjectBytes - mark.size()) + std::string(mark);
}

constexpr int64_t kFraming = 12;  // "NATS/1.0\r\n" ... "\r\n"
int64_t Line(std::string_view key, size_t value_bytes) {
  return static_cast<int64_t>(key.size() + 2 + value_bytes + 2);  // "Key: value\r\n"
}

}  // namespace

OutMessage Build(const Origin& origin, const std::string& reason, const std::string& detail) {
  OutMessage m;
  m.subject = DlqSubjectFor(origin.subject);
  m.data = origin.payload;
  m.expect_stream = DlqStreamFor(origin.stream);
  const std::string stream = Cut(origin.stream, kMaxStreamBytes);
  m.msg_id = DlqMsgId(stream, origin.stream_seq);
  bool have_id = false;
  size_t copied = 0;
  for (const auto& [k, v] : origin.headers) {
    if (k == "Nats-Msg-Id") {
      if (!have_id) m.headers.emplace_back(kOrigMsgId, v);
      have_id = true;
    } else if (k.rfind("Nats-", 0) != 0 && k.rfind("Sa-Dlq-", 0) != 0 &&
               copied < kMaxCopiedHeaders) {
      m.headers.emplace_back(k, v);
      ++copied;
    }
  }
  m.headers.emplace_back(kReason, Cut(OneLine(reason), kMaxReasonBytes));
  m.headers.emplace_back(kSubject, CutSubject(origin.subject));
  m.headers.emplace_back(kStream, stream);
  m.headers.emplace_back(kStreamSeq, std::to_string(origin.stream_seq));
  if (!detail.empty()) m.headers.emplace_back(kDetail, Cut(OneLine(detail), kMaxDetailBytes));
  return m;
}

int64_t ReceivedSize(const Headers& headers, size_t payload_bytes) {
  int64_t n = static_cast<int64_t>(payload_bytes);
  if (headers.empty()) return n;
  n += kFraming;
  for (const auto& [k, v] : headers) n += Line(k, v.size());
  return n;
}

int64_t PublishedSize(const OutMessage& m) {
  Headers all = m.headers;
  if (!m.msg_id.empty()) all.emplace_back("Nats-Msg-Id", m.msg_id);
  if (!m.expect_stream.empty()) all.emplace_back("Nats-Expected-Stream", m.expect_stream);
  return ReceivedSize(all, m.data.size());
}

int64_t MaxGrowth() {
  constexpr size_t kSeqDigits = 20;      // UINT64_MAX
  constexpr size_t kDlqStreamBytes = 7;  // WEB_DLQ, API_DLQ
  const std::string_view prefix = "dlq.";
  return kFraming +  // origin had none
         Line("Nats-Msg-Id", prefix.size() + kMaxStreamBytes + 1 + kSeqDigits) +
         Line("Nats-Expected-Stream", kDlqStreamBytes) + Line(kReason, kMaxReasonBytes) +
         Line(kSubject, kMaxSubjectBytes) + Line(kStream, kMaxStreamBytes) +
         Line(kStreamSeq, kSeqDigits) + Line(kDetail, kMaxDetailBytes) +
         static_cast<int64_t>(std::string_view(kOrigMsgId).size() -
                              std::string_view("Nats-Msg-Id").size()) +  // the id renamed
         static_cast<int64_t>(kMaxCopiedHeaders);                        // "K:v" -> "K: v"
}

std::string DlqMsgId(std::string_view origin_stream, uint64_t origin_seq) {
  return "dlq." + std::string(origin_stream) + "." + std::to_string(origin_seq);
}

bool IsDlqMsgId(std::string_view id) {
  constexpr std::string_view kPrefix = "dlq.";
  if (id.substr(0, kPrefix.size()) != kPrefix) return false;
  id.remove_prefix(kPrefix.size());
  size_t dot = id.rfind('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 1 == id.size()) return false;
  std::string_view stream = id.substr(0, dot), seq = id.substr(dot + 1);
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  auto stream_char = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-';
  };
  return std::all_of(seq.begin(), seq.end(), digit) &&
         std::all_of(stream.begin(), stream.end(), stream_char);
}

}  // namespace common::dead_letter
