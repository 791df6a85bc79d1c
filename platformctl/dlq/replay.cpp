#include "platformctl/dlq/replay.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "common/dead_letter.h"
#include "platformctl/dlq/subject.h"
#include "platformctl/json_out.h"

namespace platformctl::dlq {
namespace {

namespace dl = common::dead_letter;

constexpr size_t kSeqsPerGroup = 10;  // sequences named per reason in a report
constexpr size_t kMaxGroups = 50;     // distinct reasons kept; the rest are counted together
constexpr const char* kOtherWhy = "other reasons (more than 50 distinct ones)";

bool StartsWithNoCase(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(s[i])) !=
        std::tolower(static_cast<unsigned char>(prefix[i]))) {
      return false;
    }
  }
  return true;
}

std::string JoinSubjects(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out.empty() ? "none" : out;
}

const char* Verb(RunKind k) {
  switch (k) {
    case RunKind::kReplay:
      return "replay";
    case RunKind::kPurge:
      return "purge";
    case RunKind::kErase:
      return "erase";
  }
  return "?";
}

std::string Seqs(const RunSummary::Group& g) {
  std::string out;
  for (uint64_t s : g.seqs) out += (out.empty() ? "" : ", ") + std::to_string(s);
  if (g.count > g.seqs.size()) out += ", ...";
  return out;
}

nlohmann::json GroupsJson(const std::vector<RunSummary::Group>& groups) {
  auto a = nlohmann::json::array();
  for (const auto& g : groups) a.push_back({{"why", g.why}, {"count", g.count}, {"seqs", g.seqs}});
  return a;
}

// Removes one trailing ".replay.<stream>.<digits>"; false when there is none.
bool StripReplaySuffix(std::string_view* id) {
  constexpr std::string_view kReplay = ".replay.";
  size_t seq_dot = id->rfind('.');
  if (seq_dot == std::string_view::npos || seq_dot + 1 == id->size()) return false;
  std::string_view seq = id->substr(seq_dot + 1);
  if (!std::all_of(seq.begin(), seq.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return false;
  }
  std::string_view head = id->substr(0, seq_dot);  // "<id>.replay.<stream>"
  size_t stream_dot = head.rfind('.');
  if (stream_dot == std::string_view::npos || stream_dot + 1 == head.size()) return false;
  std::string_view rest = head.substr(0, stream_dot + 1);  // "<id>.replay."
  if (rest.size() < kReplay.size() || rest.substr(rest.size() - kReplay.size()) != kReplay) {
    return false;
  }
  *id = rest.substr(0, rest.size() - kReplay.size());
  return true;
}

// An id a replay may build on: it goes into a header, so printable ASCII only, and it must name
// something besides replay suffixes.
bool UsableOriginalId(std::string_view id) {
  if (id.empty() || id.size() > kMaxOriginalIdBytes) return false;
  for (char c : id) {
    auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7f) return false;
  }
  while (StripReplaySuffix(&id)) {
  }
  return !id.empty();
}

}  // namespace

std::optional<std::string> OriginalMsgId(const QueueInfo& q, const common::Headers& headers,
                                         std::string_view payload) {
  if (auto v = common::FindHeader(headers, dl::kOrigMsgId); v && UsableOriginalId(*v)) return v;
  if (auto v = common::FindHeader(headers, "Nats-Msg-Id");
      v && !dl::IsDlqMsgId(*v) && UsableOriginalId(*v)) {
    return v;
  }
  if (q.queue == Queue::kWeb) {
    auto j = nlohmann::json::parse(payload, nullptr, false);
    if (j.is_object()) {
      auto it = j.find("id");
      if (it != j.end() && it->is_string() && UsableOriginalId(it->get_ref<const std::string&>())) {
        return it->get<std::string>();
      }
    }
  }
  return std::nullopt;
}

bool SubjectMatches(std::string_view pattern, std::string_view subject) {
  while (true) {
    size_t pd = pattern.find('.');
    size_t sd = subject.find('.');
    std::string_view pt = pattern.substr(0, pd);
    std::string_view st = subject.substr(0, sd);
    if (st.empty()) return false;  // empty tokens are not valid subjects
    if (pt == ">") return true;
    if (pt != "*" && pt != st) return false;
    if (pd == std::string_view::npos || sd == std::string_view::npos) {
      return pd == std::string_view::npos && sd == std::string_view::npos;
    }
    pattern.remove_prefix(pd + 1);
    subject.remove_prefix(sd + 1);
  }
}

std::string ReplayMsgId(std::string_view original_id, std::string_view dlq_stream,
                        uint64_t dlq_seq) {
  return std::string(original_id) + ".replay." + std::string(dlq_stream) + "." +
         std::to_string(dlq_seq);
}

ReplayPlan PlanReplay(const QueueInfo& q, uint64_t dlq_seq, const common::Headers& headers,
                      std::string payload, const std::optional<OriginStream>& origin) {
  ReplayPlan p;
  auto subject = common::FindHeader(headers, dl::kSubject);
  auto stream = common::FindHeader(headers, dl::kStream);
  if (!subject || subject->empty()) {
    p.skip_why = std::string("no ") + dl::kSubject + " header: the origin subject is unknown";
    return p;
  }
  if (!stream || *stream != q.origin_stream) {
    p.skip_why = "origin stream '" + Printable(stream.value_or("")) + "' is not " +
                 q.origin_stream + ", the stream " + q.dlq_stream + " serves";
    return p;
  }
  if (!origin) {
    p.skip_why = "origin stream " + q.origin_stream + " does not exist (run platformctl init)";
    return p;
  }
  // Before the stream's patterns: "web.events.*" matches a cut "web.events.abc (truncated)".
  if (auto why = OriginSubjectSkipWhy(*subject)) {
    p.skip_why = *why;
    return p;
  }
  bool on_stream =
      std::any_of(origin->subjects.begin(), origin->subjects.end(),
                  [&](const std::string& pat) { return SubjectMatches(pat, *subject); });
  if (!on_stream) {
    p.skip_why = "origin subject '" + Printable(*subject) + "' is not on " + origin->name +
                 " (subjects " + JoinSubjects(origin->subjects) + ")";
    return p;
  }
  auto original_id = OriginalMsgId(q, headers, payload);
  if (!original_id) {
    p.skip_why = q.queue == Queue::kWeb
                     ? "no original message id (no usable Sa-Dlq-Msg-Id, the copy's own "
                       "Nats-Msg-Id is the dead-lettering's, and the payload has no usable \"id\")"
                     : "no original batch id (no usable Sa-Dlq-Msg-Id, and the copy's own "
                       "Nats-Msg-Id is the dead-lettering's)";
    return p;
  }
  p.publish = true;
  p.out.subject = *subject;
  p.out.data = std::move(payload);
  p.out.expect_stream = origin->name;
  p.out.msg_id = ReplayMsgId(*original_id, q.dlq_stream, dlq_seq);
  for (const auto& [k, v] : headers) {
    if (StartsWithNoCase(k, "Nats-") || StartsWithNoCase(k, "Sa-Dlq-")) continue;
    p.out.headers.emplace_back(k, v);
  }
  p.out.headers.emplace_back(dl::kReplay, q.dlq_stream + "." + std::to_string(dlq_seq));
  return p;
}

void RunSummary::AddTo(std::vector<Group>& groups, uint64_t seq, const std::string& why) {
  auto it =
      std::find_if(groups.begin(), groups.end(), [&](const Group& g) { return g.why == why; });
  if (it == groups.end() && groups.size() >= kMaxGroups) {
    it = std::find_if(groups.begin(), groups.end(),
                      [](const Group& g) { return g.why == kOtherWhy; });
    if (it == groups.end()) {
      groups.push_back({kOtherWhy, 0, {}});
      it = groups.end() - 1;
    }
  } else if (it == groups.end()) {
    groups.push_back({why, 0, {}});
    it = groups.end() - 1;
  }
  ++it->count;
  if (it->seqs.size() < kSeqsPerGroup) it->seqs.push_back(seq);
}

void RunSummary::Add(uint64_t seq, Outcome o, const std::string& why) {
  ++counts_[static_cast<int>(o)];
  if (seq > count_above_) ++counted_[static_cast<int>(o)];
  if (o == Outcome::kSkipped) AddTo(skipped_, seq, why);
  if (o == Outcome::kFailed) AddTo(failed_, seq, why);
}

uint64_t RunSummary::total() const {
  uint64_t t = 0;
  for (uint64_t c : counts_) t += c;
  return t;
}

bool RunSummary::complete() const {
  return count(Outcome::kSkipped) == 0 && count(Outcome::kFailed) == 0 && !stopped_;
}

void PrintSummaryText(const RunSummary& s, RunKind kind, const QueueInfo& q, std::ostream& out,
                      bool verdict, const std::string& continue_hint) {
  if (kind == RunKind::kReplay) {
    out << "replayed: " << s.count(Outcome::kReplayed) << "\n";
    out << "already there from an earlier run: " << s.count(Outcome::kAlreadyThere) << "\n";
  } else {
    out << "erased: " << s.count(Outcome::kErased) << "\n";
    if (s.count(Outcome::kGone) > 0) {
      out << "already gone (expired or erased meanwhile): " << s.count(Outcome::kGone) << "\n";
    }
  }
  out << "skipped (kept in " << q.dlq_stream << "): " << s.count(Outcome::kSkipped) << "\n";
  for (const auto& g : s.skipped())
    out << "  " << g.count << " x " << g.why << ": seq " << Seqs(g) << "\n";
  out << "failed: " << s.count(Outcome::kFailed) << "\n";
  for (const auto& g : s.failed())
    out << "  " << g.count << " x " << g.why << ": seq " << Seqs(g) << "\n";
  if (s.stopped()) {
    out << "stopped early: " << *s.stopped() << "; the rest of the selection is still in "
        << q.dlq_stream << (continue_hint.empty() ? "" : " (" + continue_hint + ")") << "\n";
  }
  if (verdict && !s.complete()) {
    out << Verb(kind) << " partly done: exit code 1\n";
  }
}

void PrintSummaryJson(const RunSummary& s, RunKind kind, const QueueInfo& q,
                      const std::string& selection, uint64_t end_seq, std::ostream& out) {
  nlohmann::json j;
  j["command"] = Verb(kind);
  j["queue"] = q.name;
  j["stream"] = q.dlq_stream;
  j["selection"] = selection;
  j["end_seq"] = end_seq;
  if (kind == RunKind::kReplay) {
    j["replayed"] = s.count(Outcome::kReplayed);
    j["already_there"] = s.count(Outcome::kAlreadyThere);
  } else {
    j["erased"] = s.count(Outcome::kErased);
    j["already_gone"] = s.count(Outcome::kGone);
  }
  j["skipped"] = s.count(Outcome::kSkipped);
  j["failed"] = s.count(Outcome::kFailed);
  j["skipped_reasons"] = GroupsJson(s.skipped());
  j["failed_reasons"] = GroupsJson(s.failed());
  j["stopped"] = s.stopped() ? nlohmann::json(*s.stopped()) : nlohmann::json(nullptr);
  j["complete"] = s.complete();
  out << platformctl::DumpJson(j) << "\n";
}

std::string ProgressLine(const RunSummary& s, RunKind kind, const QueueInfo& q, uint64_t looked_at,
                         uint64_t at_most, double elapsed_seconds) {
  char buf[256];
  double rate = elapsed_seconds > 0 ? static_cast<double>(s.total()) / elapsed_seconds : 0;
  uint64_t done =
      kind == RunKind::kReplay ? s.count(Outcome::kReplayed) : s.count(Outcome::kErased);
  std::snprintf(
      buf, sizeof(buf),
      "%s %s: %llu of at most %llu looked at, %llu %s, %llu already, %llu skipped, "
      "%llu failed, %.0f/s",
      Verb(kind), q.dlq_stream.c_str(), static_cast<unsigned long long>(looked_at),
      static_cast<unsigned long long>(at_most), static_cast<unsigned long long>(done),
      kind == RunKind::kReplay ? "replayed" : "erased",
      static_cast<unsigned long long>(s.count(Outcome::kAlreadyThere) + s.count(Outcome::kGone)),
      static_cast<unsigned long long>(s.count(Outcome::kSkipped)),
      static_cast<unsigned long long>(s.count(Outcome::kFailed)), rate);
  return buf;
}

common::Result<double> ParseRate(std::string_view text) {
  std::string_view num = text;
  if (num.size() > 2 && num.substr(num.size() - 2) == "/s") num.remove_suffix(2);
  double v = 0;
  auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), v);
  if (ec != std::errc() || p != num.data() + num.size() || !std::isfinite(v) || v <= 0 || v > 1e6) {
    return common::Error::Invalid("--rate '" + std::string(text) +
                                  "' is not a rate: messages per second, e.g. 200 or 200/s");
  }
  return v;
}

std::chrono::nanoseconds Pacer::Next(std::chrono::nanoseconds now) {
  if (per_second_ <= 0) return std::chrono::nanoseconds(0);
  auto slot = std::max(next_, now);
  next_ = slot + std::chrono::nanoseconds(static_cast<int64_t>(1e9 / per_second_));
  return slot - now;
}

}  // namespace platformctl::dlq
