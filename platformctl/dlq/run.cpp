#include "platformctl/dlq/run.h"

#include <algorithm>
#include <limits>
#include <map>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/nats_stream.h"
#include "platformctl/dlq/list.h"
#include "platformctl/erasure_raft.h"
#include "platformctl/json_out.h"
#include "platformctl/nats_admin.h"

namespace platformctl::dlq {
namespace {

using common::ErrorKind;
using platformctl::nats_dlq::StoredMessage;
using Clock = std::chrono::steady_clock;

}  // namespace

Entry EntryOf(const QueueInfo& q, const StoredMessage& m) {
  return MakeEntry(q, m.seq, m.time_ns, m.subject, m.size,
                   [&m](const char* name) { return m.Header(name); });
}

double SecondsSince(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

bool EraseBatch::Add(const Entry& e) {
  entries_.push_back(e);
  return entries_.size() < kBatch || Flush();
}

bool EraseBatch::Flush() {
  if (entries_.empty()) return true;
  std::vector<uint64_t> seqs;
  seqs.reserve(entries_.size());
  for (const auto& e : entries_) seqs.push_back(e.seq);
  auto results = platformctl::nats_dlq::EraseAll(env_.client, q_.dlq_stream, seqs,
                                                 common::Millis(env_.client.request_timeout_ms()));
  bool keep_going = true;
  for (size_t i = 0; i < seqs.size(); ++i) {
    const auto& r = results[i];
    if (r) {
      summary_.Add(seqs[i], Outcome::kErased);
      facts_.Erased(entries_[i]);
    } else if (r.error().kind == ErrorKind::kNotFound) {
      summary_.Add(seqs[i], Outcome::kGone);
    } else {
      summary_.Add(seqs[i], Outcome::kFailed, "kept: " + r.error().message);
      if (r.error().kind == ErrorKind::kRetryable && keep_going) {
        summary_.MarkStopped(r.error().message);
        keep_going = false;
      }
    }
  }
  entries_.clear();
  return keep_going;
}

common::Result<platformctl::nats_admin::ReplicaSet> ReplicasBefore(RunEnv& env,
                                                                   const QueueInfo& q) {
  return platformctl::nats_admin::ReadReplicas(env.client, q.dlq_stream);
}

ErasureReport FinishErasure(RunEnv& env, const QueueInfo& q,
                            const common::Result<platformctl::nats_admin::ReplicaSet>& before,
                            const ErasureFacts& facts) {
  using platformctl::nats_admin::ReplicaSet;
  auto after = platformctl::nats_admin::ReadReplicas(env.client, q.dlq_stream);
  // A replica that is online applies the last erasures a moment after the leader: it reports a
  // lag (or "not current") meanwhile. One that is offline will not catch up now.
  for (int i = 0; i < 20 && !facts.empty() && after && !after->AllCurrent(); ++i) {
    bool online = std::none_of(after->peers.begin(), after->peers.end(),
                               [](const auto& p) { return p.offline; });
    if (!online) break;
    env.stop.WaitFor(std::chrono::milliseconds(250));
    after = platformctl::nats_admin::ReadReplicas(env.client, q.dlq_stream);
  }
  std::map<std::string, uint64_t> origin;
  uint64_t origin_last = 0;
  bool origin_read = false;
  if (!facts.empty()) {
    if (auto st = platformctl::nats_admin::ReadState(env.client, q.origin_stream)) {
      origin[q.origin_stream] = st->messages;
      origin_last = st->last_seq;
      origin_read = true;
    }
  }
  ReplicaSet unknown;  // an unreadable set counts as no replica current
  unknown.raft = true;
  unknown.configured = 1;
  // The raft logs: marked now that every erasure is committed, then waited for.
  std::vector<raft::LogCheck> logs;
  std::string never;  // the origin stream never held them
  const bool raft = (before && before->raft) || (after && after->raft) || !before || !after;
  if (raft && !facts.empty()) {
    logs.push_back(MarkRaftLog(env, q.dlq_stream));
    for (const auto& o : facts.OriginStreams()) {
      if (o.stream != q.origin_stream) continue;
      // Sequences only grow: a stream whose last is below the originals' never stored them (or
      // was created anew since, with a new raft group), so its log cannot hold them.
      if (origin_read && origin_last < o.first_seq) {
        never = o.stream + "'s last sequence is " + std::to_string(origin_last) +
                ", below the originals' (" + std::to_string(o.first_seq) +
                "): its raft log never held them";
        continue;
      }
      logs.push_back(MarkRaftLog(env, q.origin_stream));
    }
    WaitRaftLogs(env, logs);
  }
  ErasureReport r = MakeErasureReport(q, before ? *before : unknown, after ? *after : unknown,
                                      facts, origin, logs);
  if (!never.empty()) r.done.push_back(never);
  if (!before || !after) {
    r.replicas_ok = false;
    r.not_yet.insert(r.not_yet.begin(),
                     "the replicas of " + q.dlq_stream + " could not be read: " +
                         (!before ? before.error().message : after.error().message));
  }
  return r;
}

int PrintErasure(RunEnv& env, const RunSummary& summary, RunKind kind, const QueueInfo& q,
                 const ErasureReport& report) {
  PrintSummaryText(summary, kind, q, env.out, /*verdict=*/false);
  PrintErasureText(report, env.out);
  const bool done = summary.complete() && report.ok();
  if (!done) {
    env.out << (kind == RunKind::kPurge ? "purge" : "erase") << " partly done: exit code 1"
            << (!summary.complete()   ? ""
                : !report.replicas_ok ? " (not every replica erased them)"
                                      : " (a raft log may still hold them)")
            << "\n";
  }
  return done ? 0 : 1;
}

std::string ErasureSummaryJson(const RunSummary& summary, RunKind kind, const QueueInfo& q,
                               const std::string& selection, uint64_t end_seq,
                               const ErasureReport& report) {
  std::ostringstream body;
  PrintSummaryJson(summary, kind, q, selection, end_seq, body);
  auto j = nlohmann::json::parse(body.str());
  j["erasure"] = nlohmann::json::parse(ErasureJson(report));
  j["complete"] = summary.complete() && report.ok();
  return platformctl::DumpJson(j);
}

Progress::Progress(std::ostream& err, bool enabled) : err_(err), enabled_(enabled) {}

Progress::~Progress() { Clear(); }

void Progress::Show(const std::string& line, bool force) {
  if (!enabled_) return;
  auto now = Clock::now();
  if (!force && shown_ && now - last_ < std::chrono::milliseconds(250)) return;
  last_ = now;
  shown_ = true;
  err_ << "\r" << line << "\x1b[K" << std::flush;
}

void Progress::Clear() {
  if (enabled_ && shown_) err_ << "\r\x1b[K" << std::flush;
  shown_ = false;
}

common::Result<Walk> OpenWalk(common::NatsClient& client, const QueueInfo& q,
                              const std::string& filter_subject, uint64_t start_seq,
                              int64_t start_time_ns, uint64_t end_seq_cap, bool headers_only) {
  auto state = platformctl::nats_admin::ReadReplicas(client, q.dlq_stream);
  if (!state) {
    if (state.error().kind == ErrorKind::kNotFound) {
      return common::Error::NotFound(q.dlq_stream + " does not exist (run platformctl init)");
    }
    return state.error();
  }
  Walk w;
  w.end_seq = std::min(state->messages == 0 ? 0 : state->last_seq, end_seq_cap);
  platformctl::nats_dlq::BrowseSpec spec;
  spec.stream = q.dlq_stream;
  spec.filter_subject = filter_subject;
  spec.start_seq = std::max<uint64_t>(start_seq, 1);
  spec.start_time_ns = start_time_ns;
  spec.end_seq = w.end_seq;
  spec.headers_only = headers_only;
  spec.at_most = state->messages;
  spec.replicas = state->configured;
  auto b = platformctl::nats_dlq::StreamBrowser::Open(client, spec);
  if (!b) return b.error();
  w.browser = std::move(*b);
  return w;
}

bool ForEachInWalk(RunEnv& env, Walk& walk, RunSummary& summary, uint64_t& looked_at,
                   const std::function<bool(StoredMessage&)>& visit) {
  while (true) {
    if (env.stop.stopping()) {
      summary.MarkStopped(kInterrupted);
      return false;
    }
    auto next = walk.browser->Next();
    if (!next) {
      summary.MarkStopped(next.error().message);
      return false;
    }
    if (!*next) return true;
    ++looked_at;
    if (!visit(**next)) return false;
  }
}

int Fail(RunEnv& env, const common::Error& e) {
  env.err << "platformctl: " << e.message << "\n";
  return e.kind == ErrorKind::kRetryable ? 3 : 1;
}

int RunList(RunEnv& env, const QueueInfo& q, const Selection& sel, bool json, bool summary) {
  auto walk = OpenWalk(env.client, q, sel.FilterSubject(q), sel.StartSeq(), sel.StartTimeNs(),
                       sel.EndSeq(std::numeric_limits<uint64_t>::max()), true);
  if (!walk) return Fail(env, walk.error());
  std::vector<Entry> entries;
  ListSummary counts;
  Progress progress(env.err, env.progress);
  uint64_t looked_at = 0;
  while (true) {
    if (env.stop.stopping()) {
      progress.Clear();
      env.err << "platformctl: " << kInterrupted << "\n";
      return 1;
    }
    auto next = walk->browser->Next();
    if (!next) {
      progress.Clear();
      return Fail(env, next.error());
    }
    if (!*next) break;
    ++looked_at;
    Entry e = EntryOf(q, **next);
    if (!sel.Matches(e)) continue;
    if (summary)
      counts.Add(e);
    else
      entries.push_back(std::move(e));
    progress.Show("reading " + q.dlq_stream + ": " + std::to_string(looked_at) + " of at most " +
                  std::to_string(walk->browser->initial_pending()));
  }
  progress.Clear();
  if (summary) {
    if (json)
      counts.PrintJson(q, env.out);
    else
      counts.PrintText(q, env.out);
  } else if (json) {
    PrintListJson(entries, q, env.out);
  } else {
    PrintListText(entries, q, env.out);
  }
  return 0;
}

int RunPurge(RunEnv& env, const QueueInfo& q, const Selection& sel, bool yes, bool json) {
  auto walk = OpenWalk(env.client, q, sel.FilterSubject(q), sel.StartSeq(), sel.StartTimeNs(),
                       sel.EndSeq(std::numeric_limits<uint64_t>::max()), true);
  if (!walk) return Fail(env, walk.error());
  if (yes && !json) {
    env.out << "purge " << q.dlq_stream << " (" << sel.Describe() << ") up to seq " << walk->end_seq
            << ", the last when the run started\n";
  }

  RunSummary summary;
  ErasureFacts facts;
  EraseBatch eraser(env, q, summary, facts);
  ListSummary would;
  common::Result<platformctl::nats_admin::ReplicaSet> before =
      yes ? ReplicasBefore(env, q)
          : common::Result<platformctl::nats_admin::ReplicaSet>(
                platformctl::nats_admin::ReplicaSet{});
  Progress progress(env.err, env.progress);
  const auto start = Clock::now();
  uint64_t looked_at = 0;
  ForEachInWalk(env, *walk, summary, looked_at, [&](StoredMessage& m) {
    Entry e = EntryOf(q, m);
    if (!sel.Matches(e)) return true;
    if (!yes) {
      would.Add(e);
      return true;
    }
    if (!eraser.Add(e)) return false;
    progress.Show(ProgressLine(summary, RunKind::kPurge, q, looked_at,
                               walk->browser->initial_pending(), SecondsSince(start)));
    return true;
  });
  if (!summary.stopped()) eraser.Flush();
  progress.Clear();
  if (!yes) {
    if (summary.stopped()) {
      env.err << "platformctl: " << *summary.stopped() << "\n";
      return 1;
    }
    if (json) {
      would.PrintJson(q, env.out);
    } else {
      env.out << "would purge (securely erase) from " << q.dlq_stream << ", up to seq "
              << walk->end_seq << ":\n";
      would.PrintText(q, env.out);
      env.out << "nothing was erased: run the same command with --yes to erase "
              << (would.count() == 1 ? "it" : "them") << " (exit code " << kExitNotConfirmed
              << ")\n";
    }
    return kExitNotConfirmed;
  }
  ErasureReport report = FinishErasure(env, q, before, facts);
  if (json) {
    env.out << ErasureSummaryJson(summary, RunKind::kPurge, q, sel.Describe(), walk->end_seq,
                                  report)
            << "\n";
    return summary.complete() && report.ok() ? 0 : 1;
  }
  return PrintErasure(env, summary, RunKind::kPurge, q, report);
}

}  // namespace platformctl::dlq
