#include "platformctl/erasure_report.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include <nlohmann/json.hpp>

#include "platformctl/json_out.h"

namespace platformctl::dlq {
namespace {

using platformctl::nats_admin::Replica;
using platformctl::nats_admin::ReplicaSet;

bool Current(const Replica& r) { return r.leader || (r.current && !r.offline && r.lag == 0); }

std::string StateOf(const Replica& r) {
  if (r.leader) return "leader";
  if (r.offline) {
    return "offline (last heard from " +
           std::to_string(static_cast<int64_t>(std::llround(r.active_seconds_ago))) + " s ago)";
  }
  if (!r.current || r.lag > 0) return "behind (" + std::to_string(r.lag) + " log entries)";
  return "current";
}

const Replica* Find(const ReplicaSet& rs, const std::string& name) {
  for (const auto& p : rs.peers) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

}  // namespace

std::string FormatSeqRanges(const std::vector<uint64_t>& seqs) {
  std::string out;
  for (size_t i = 0; i < seqs.size();) {
    size_t j = i;
    while (j + 1 < seqs.size() && seqs[j + 1] == seqs[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += std::to_string(seqs[i]);
    if (j > i) out += "-" + std::to_string(seqs[j]);
    i = j + 1;
  }
  return out;
}

common::Result<std::vector<uint64_t>> ParseSeqRanges(std::string_view text) {
  auto bad = [&] {
    return common::Error::Invalid("--seqs '" + Printable(text) +
                                  "' is not a list of DLQ sequences (e.g. 1-20,25,30-31)");
  };
  std::vector<uint64_t> out;
  if (text.empty()) return bad();
  while (!text.empty()) {
    size_t comma = text.find(',');
    std::string_view part = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    if (comma != std::string_view::npos && text.empty()) return bad();  // a trailing comma
    size_t dash = part.find('-');
    uint64_t a = 0, b = 0;
    std::string_view first = part.substr(0, dash);
    std::string_view last = dash == std::string_view::npos ? first : part.substr(dash + 1);
    if (first.empty() || last.empty() ||
        std::from_chars(first.data(), first.data() + first.size(), a).ptr !=
            first.data() + first.size() ||
        std::from_chars(last.data(), last.data() + last.size(), b).ptr !=
            last.data() + last.size() ||
        a == 0 || b < a) {
      return bad();
    }
    if (b - a >= kMaxVerifySeqs || out.size() + (b - a + 1) > kMaxVerifySeqs) {
      return common::Error::Invalid("--seqs names more than " + std::to_string(kMaxVerifySeqs) +
                                    " sequences");
    }
    for (uint64_t s = a; s <= b; ++s) out.push_back(s);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

void ErasureFacts::Erased(const Entry& e) {
  seqs_.push_back(e.seq);
  if (e.stream.empty() || !e.stream_seq) return;
  auto [it, fresh] = originals_.try_emplace(e.stream);
  Originals& o = it->second;
  o.stream = e.stream;
  o.first_seq = fresh ? *e.stream_seq : std::min(o.first_seq, *e.stream_seq);
  o.last_seq = fresh ? *e.stream_seq : std::max(o.last_seq, *e.stream_seq);
  ++o.count;
}

std::vector<uint64_t> ErasureFacts::Seqs() const {
  std::vector<uint64_t> s = seqs_;
  std::sort(s.begin(), s.end());
  s.erase(std::unique(s.begin(), s.end()), s.end());
  return s;
}

std::vector<Originals> ErasureFacts::OriginStreams() const {
  std::vector<Originals> out;
  for (const auto& [name, o] : originals_) out.push_back(o);
  return out;
}

std::string RaftLogSentence(const QueueInfo& q) {
  return "the raft log of " + q.dlq_stream +
         " on every replica holds the erased messages until that replica's next snapshot, "
         "every 2 to 3 minutes while the stream changes";
}

namespace {

const char* StateName(raft::ReplicaLog::State s) {
  switch (s) {
    case raft::ReplicaLog::State::kCompacted:
      return "compacted";
    case raft::ReplicaLog::State::kHolds:
      return "holds";
    case raft::ReplicaLog::State::kUnread:
      break;
  }
  return "unread";
}

}  // namespace

std::vector<std::string> RaftLogNotYet(const raft::LogCheck& c, const std::string& verify) {
  std::vector<std::string> out;
  const std::string again = verify.empty() ? std::string() : ": check again with " + verify;
  if (!c.error.empty()) {
    out.push_back("the raft logs of " + c.stream + " could not be read (" + c.error +
                  "): every replica's log holds the erased messages until its next snapshot, "
                  "every 2 to 3 minutes while the stream changes, and nothing here could see it" +
                  again);
    return out;
  }
  if (c.verdict.replicas.empty()) {
    out.push_back("the replicas of " + c.stream +
                  " were not known, so none of their raft logs was checked" + again);
  }
  for (const auto& r : c.verdict.replicas) {
    if (r.state == raft::ReplicaLog::State::kCompacted) continue;
    if (r.state == raft::ReplicaLog::State::kHolds) {
      out.push_back("the raft log of " + c.stream + " on " + r.server + " still holds entries " +
                    std::to_string(r.first) + ".." + std::to_string(c.erased_at) +
                    " from before the erasure, which carried the erased messages, until its next "
                    "snapshot (every 2 to 3 minutes while the stream changes)" +
                    again);
    } else {
      out.push_back("the raft log of " + c.stream + " on " + r.server +
                    " was not read (its server did not answer): it holds the erased messages "
                    "until its next snapshot once it runs" +
                    again);
    }
  }
  return out;
}

std::vector<std::string> RaftLogLines(const raft::LogCheck& c) {
  std::vector<std::string> out;
  if (!c.error.empty()) {
    out.push_back(c.stream + ": NOT READ: " + c.error);
    return out;
  }
  for (const auto& r : c.verdict.replicas) {
    out.push_back(c.stream + " on " + r.server + ": " + raft::Describe(r, c.erased_at));
  }
  return out;
}

std::string RaftLogJson(const raft::LogCheck& c) {
  nlohmann::json j = {{"stream", c.stream},       {"group", c.group},
                      {"erased_at", c.erased_at}, {"ok", c.ok()},
                      {"error", c.error},         {"replicas", nlohmann::json::array()}};
  for (const auto& r : c.verdict.replicas) {
    j["replicas"].push_back(
        {{"name", r.server}, {"state", StateName(r.state)}, {"first", r.first}});
  }
  return platformctl::DumpJson(j);
}

std::string SnapshotCatchUpSentence(const QueueInfo& q, const std::string& replica) {
  return replica +
         " did not erase them: catching up from the raft log it erases them as well, but "
         "catching up from a snapshot (when the leader's log was compacted meanwhile, within 3 "
         "minutes) it removes them without overwriting, and their bytes stay in its block files; "
         "once it is back and current, rebuild it from the others: platformctl dlq rebuild "
         "--queue " +
         q.name + " --replica " + replica + " --yes (as the provisioning user)";
}

ErasureReport MakeErasureReport(const QueueInfo& q, const ReplicaSet& before,
                                const ReplicaSet& after, const ErasureFacts& facts,
                                const std::map<std::string, uint64_t>& origin_messages,
                                const std::vector<raft::LogCheck>& raft_logs) {
  ErasureReport r;
  r.raft = after.raft || before.raft;
  r.configured = std::max(after.configured, before.configured);
  const auto seqs = facts.Seqs();
  r.erased_seqs = FormatSeqRanges(seqs);
  std::vector<std::string> names;
  for (const auto& p : after.peers) names.push_back(p.name);
  for (const auto& p : before.peers) {
    if (std::find(names.begin(), names.end(), p.name) == names.end()) names.push_back(p.name);
  }
  for (const auto& name : names) {
    const Replica* b = Find(before, name);
    const Replica* a = Find(after, name);
    ErasureReport::ReplicaLine line;
    line.name = name;
    line.leader = a != nullptr && a->leader;
    line.erased = a != nullptr && b != nullptr && Current(*a) && Current(*b);
    if (a == nullptr) {
      line.state = "no longer a replica";
    } else if (b != nullptr && !Current(*b) && Current(*a)) {
      line.state = StateOf(*a) + ", but " + StateOf(*b) + " when the run began";
    } else {
      line.state = StateOf(*a);
    }
    if (!line.erased) r.replicas_ok = false;
    r.replicas.push_back(std::move(line));
  }
  const bool missing = r.raft && static_cast<int>(after.peers.size()) < r.configured;
  if (missing) r.replicas_ok = false;
  if (seqs.empty()) {  // nothing was erased: nothing is pending on any copy either
    r.replicas_ok = true;
    return r;
  }

  for (const auto& line : r.replicas) {
    if (!line.erased) r.not_yet.push_back(SnapshotCatchUpSentence(q, line.name));
  }
  if (missing) {
    r.not_yet.push_back(q.dlq_stream + " has " + std::to_string(after.peers.size()) + " of its " +
                        std::to_string(r.configured) +
                        " replicas: the missing one is rebuilt from a snapshot when it is added "
                        "back, without these messages");
  }
  r.verify_command = "platformctl dlq verify --queue " + q.name + " --seqs " + r.erased_seqs;
  r.raft_logs = raft_logs;
  auto check_of = [&](const std::string& stream) -> const raft::LogCheck* {
    for (const auto& c : raft_logs) {
      if (c.stream == stream) return &c;
    }
    return nullptr;
  };
  if (const raft::LogCheck* dlq = check_of(q.dlq_stream); dlq != nullptr && dlq->erased_at > 0) {
    r.verify_command += " --raft-index " + std::to_string(dlq->erased_at);
  }
  // What verify cannot see by itself: which replicas did not erase them (their block files may
  // keep the bytes until they are rebuilt).
  std::string unerased;
  for (const auto& line : r.replicas) {
    if (!line.erased) unerased += (unerased.empty() ? "" : ",") + line.name;
  }
  if (!unerased.empty()) r.verify_command += " --not-erased-on " + unerased;
  if (r.raft) {
    if (raft_logs.empty()) {
      r.not_yet.push_back(RaftLogSentence(q));
      r.raft_logs_ok = false;
    }
    for (const auto& c : raft_logs) {
      // The origin's log: "check again" is by hand (verify looks at the DLQ's).
      auto lines = RaftLogNotYet(c, c.stream == q.dlq_stream ? r.verify_command : std::string());
      if (!lines.empty() || !c.ok()) r.raft_logs_ok = false;
      for (auto& l : lines) r.not_yet.push_back(std::move(l));
      if (c.ok()) {
        r.done.push_back("the raft log of " + c.stream + " on every replica was compacted past " +
                         "the erasure (index " + std::to_string(c.erased_at) +
                         "): no log file holds the erased messages");
      }
    }
  }
  for (const auto& o : facts.OriginStreams()) {
    if (o.stream != q.origin_stream) continue;  // a header naming another stream: not ours
    const std::string name = Printable(o.stream);
    const std::string which = std::to_string(o.count) + " original" + (o.count == 1 ? "" : "s") +
                              " in " + name + " (seq " + std::to_string(o.first_seq) +
                              (o.last_seq != o.first_seq ? ".." + std::to_string(o.last_seq) : "") +
                              ")";
    auto held = origin_messages.find(o.stream);
    if (held != origin_messages.end() && held->second == 0) {
      r.done.push_back(which + ", acknowledged when dead-lettered, " +
                       (o.count == 1 ? "is" : "are") + " gone from its block files: " + name +
                       " holds no message now, and nats-server truncates a stream's last block "
                       "when its last message goes" +
                       (r.replicas_ok ? ""
                                      : " (on its current replicas: one that was down when they "
                                        "were acknowledged may still hold them)"));
    } else {
      r.not_yet.push_back(
          which + (o.count == 1 ? " was" : " were") +
          " acknowledged when dead-lettered, which removes a message without overwriting "
          "it: the bytes stay in " +
          name +
          "'s block files until every message stored beside them is gone (a block is removed "
          "when it empties, the last one truncated when the stream is empty" +
          (held != origin_messages.end()
               ? "; " + name + " holds " + std::to_string(held->second) + " messages now"
               : std::string()) +
          ")");
    }
    if (r.raft && raft_logs.empty()) {  // not checked at all (else: not concerned)
      r.not_yet.push_back("the raft log of " + name + " holds those originals until its " +
                          "next snapshot (every 2 to 3 minutes while the stream changes)");
      r.raft_logs_ok = false;
    }
  }
  return r;
}

void PrintErasureText(const ErasureReport& r, std::ostream& out) {
  if (r.erased_seqs.empty()) return;  // nothing erased: nothing to say about the copies
  if (!r.raft) {
    out << "copies: one replica, no raft log";
    if (!r.replicas.empty()) out << " (" << r.replicas.front().name << ")";
    out << ": overwritten in its block file\n";
  } else {
    out << "replicas (" << r.configured << " configured):\n";
    for (const auto& l : r.replicas) {
      out << "  " << l.name << ": " << l.state << ": "
          << (l.erased ? "erased from its block files" : "NOT ERASED") << "\n";
    }
  }
  if (!r.raft_logs.empty()) {
    out << "raft logs:\n";
    for (const auto& c : r.raft_logs) {
      for (const auto& l : RaftLogLines(c)) out << "  " << l << "\n";
    }
  }
  for (const auto& s : r.done) out << "also: " << s << "\n";
  if (!r.not_yet.empty()) {
    out << "not yet true:\n";
    for (const auto& s : r.not_yet) out << "  - " << s << "\n";
  }
  if (!r.verify_command.empty()) {
    constexpr size_t kLongest = 2000;
    if (r.verify_command.size() <= kLongest) {
      out << "verify later: " << r.verify_command << "\n";
    } else {
      out << "verify later: platformctl dlq verify with --seqs set to erasure.erased_seqs of this "
             "command's --json output (too long to print: "
          << r.erased_seqs.size() << " characters)\n";
    }
  }
}

std::string ErasureJson(const ErasureReport& r) {
  nlohmann::json j;
  j["raft"] = r.raft;
  j["configured"] = r.configured;
  j["replicas"] = nlohmann::json::array();
  for (const auto& l : r.replicas) {
    j["replicas"].push_back(
        {{"name", l.name}, {"leader", l.leader}, {"erased", l.erased}, {"state", l.state}});
  }
  j["not_yet"] = r.not_yet;
  j["done"] = r.done;
  j["erased_seqs"] = r.erased_seqs;
  j["verify_command"] = r.verify_command;
  j["replicas_ok"] = r.replicas_ok;
  j["raft_logs"] = nlohmann::json::array();
  for (const auto& c : r.raft_logs) j["raft_logs"].push_back(nlohmann::json::parse(RaftLogJson(c)));
  j["raft_logs_ok"] = r.raft_logs_ok;
  return platformctl::DumpJson(j);
}

}  // namespace platformctl::dlq
