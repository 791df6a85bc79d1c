#include "platformctl/dlq/select.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "common/dead_letter.h"
#include "common/timefmt.h"
#include "common/topology.h"

namespace platformctl::dlq {
namespace {

using common::Error;

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool AllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::string Quote(const std::string& s) {
  bool plain = !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ||
           c == ':';
  });
  return plain ? s : "'" + s + "'";
}

}  // namespace

bool ValidKey(std::string_view k) {
  if (k.empty()) return false;
  for (char c : k) {
    if (c == '.' || c == '*' || c == '>' || std::isspace(static_cast<unsigned char>(c)) ||
        static_cast<unsigned char>(c) < 0x20) {
      return false;
    }
  }
  return true;
}

std::optional<Queue> ParseQueue(std::string_view text) {
  if (text == "web") return Queue::kWeb;
  if (text == "api") return Queue::kApi;
  return std::nullopt;
}

QueueInfo InfoFor(Queue q) {
  namespace t = common::topology;
  if (q == Queue::kWeb) {
    return {q, "web", t::kWebDlq, t::kWebEvents, t::kWebDlqSubjectPrefix, "site"};
  }
  return {q, "api", t::kApiDlq, t::kApiMetrics, t::kApiDlqSubjectPrefix, "tenant"};
}

common::Result<int64_t> ParseRfc3339(std::string_view s) {
  if (auto t = common::ParseRfc3339(s, {.day_alone = true, .space_for_t = true})) return *t;
  return Error::Invalid("'" + std::string(s) +
                        "' is not a time (RFC 3339, e.g. 2026-11-29T16:10:13Z) or a day "
                        "(2026-11-29) between 1678 and 2261");
}

common::Result<Bound> ParseBound(std::string_view text) {
  Bound b;
  if (AllDigits(text)) {
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), b.seq);
    if (ec != std::errc() || b.seq == 0) {
      return Error::Invalid("'" + std::string(text) + "' is not a DLQ sequence (1 or more)");
    }
    return b;
  }
  auto t = ParseRfc3339(text);
  if (!t) return t.error();
  b.is_time = true;
  b.time_ns = *t;
  return b;
}

std::string Printable(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) c = '?';
  }
  return out;
}

Entry MakeEntry(const QueueInfo& q, uint64_t seq, int64_t time_ns, std::string_view dlq_subject,
                uint64_t size, const HeaderLookup& header) {
  namespace dl = common::dead_letter;
  Entry e;
  e.seq = seq;
  e.time_ns = time_ns;
  e.size = size;
  if (dlq_subject.substr(0, q.dlq_prefix.size()) == q.dlq_prefix) {
    e.key = std::string(dlq_subject.substr(q.dlq_prefix.size()));
  } else {
    e.key = std::string(dlq_subject);
  }
  e.stream = header(dl::kStream).value_or("");
  e.subject = header(dl::kSubject).value_or("");
  e.reason = header(dl::kReason).value_or("");
  e.detail = header(dl::kDetail).value_or("");
  if (auto v = header(dl::kStreamSeq); v && AllDigits(*v)) {
    uint64_t n = 0;
    if (std::from_chars(v->data(), v->data() + v->size(), n).ec == std::errc()) e.stream_seq = n;
  }
  return e;
}

common::Result<Selection> Selection::Parse(const Spec& spec) {
  Selection s;
  s.all_ = spec.all;
  if (spec.from) {
    auto b = ParseBound(*spec.from);
    if (!b) return Error::Invalid("--from: " + b.error().message);
    s.from_ = *b;
  }
  if (spec.to) {
    auto b = ParseBound(*spec.to);
    if (!b) return Error::Invalid("--to: " + b.error().message);
    s.to_ = *b;
  }
  if (s.from_ && s.to_ && s.from_->is_time == s.to_->is_time) {
    bool backwards =
        s.from_->is_time ? s.from_->time_ns > s.to_->time_ns : s.from_->seq > s.to_->seq;
    if (backwards) return Error::Invalid("--from is after --to: nothing would be selected");
  }
  if (spec.key) {
    if (!ValidKey(*spec.key)) {
      return Error::Invalid("--key '" + Printable(*spec.key) +
                            "' is not a site or tenant id (one subject token: no '.', '*', '>' "
                            "or white space)");
    }
    s.key_ = *spec.key;
  }
  if (spec.reason) {
    if (spec.reason->empty()) return Error::Invalid("--reason is empty");
    s.reason_ = *spec.reason;
    s.reason_lower_ = Lower(*spec.reason);
  }
  s.empty_ = !s.all_ && !s.from_ && !s.to_ && !s.key_ && !s.reason_;
  return s;
}

bool Selection::Matches(const Entry& e) const {
  if (from_) {
    if (from_->is_time ? e.time_ns < from_->time_ns : e.seq < from_->seq) return false;
  }
  if (to_) {
    if (to_->is_time ? e.time_ns > to_->time_ns : e.seq > to_->seq) return false;
  }
  if (key_ && e.key != *key_) return false;
  if (reason_lower_ && Lower(e.reason).find(*reason_lower_) == std::string::npos) return false;
  return true;
}

std::string Selection::FilterSubject(const QueueInfo& q) const {
  return q.dlq_prefix + (key_ ? *key_ : "*");
}

uint64_t Selection::StartSeq() const { return from_ && !from_->is_time ? from_->seq : 1; }

int64_t Selection::StartTimeNs() const { return from_ && from_->is_time ? from_->time_ns : 0; }

uint64_t Selection::EndSeq(uint64_t last_seq_at_start) const {
  if (to_ && !to_->is_time) return std::min(last_seq_at_start, to_->seq);
  return last_seq_at_start;
}

std::string Selection::Describe() const {
  std::string out;
  auto add = [&out](const std::string& part) { out += (out.empty() ? "" : " ") + part; };
  auto bound = [](const Bound& b) {
    return b.is_time ? common::FormatRfc3339(b.time_ns) : std::to_string(b.seq);
  };
  if (all_) add("--all");
  if (from_) add("--from " + bound(*from_));
  if (to_) add("--to " + bound(*to_));
  if (key_) add("--key " + Quote(Printable(*key_)));
  if (reason_) add("--reason " + Quote(Printable(*reason_)));
  return out.empty() ? "(everything)" : out;
}

}  // namespace platformctl::dlq
