#include "platformctl/dlq/verify.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>

#include <nlohmann/json.hpp>

#include "platformctl/dlq/nats.h"
#include "platformctl/erasure_raft.h"
#include "platformctl/json_out.h"
#include "platformctl/leader_tour.h"
#include "platformctl/nats_admin.h"
#include "platformctl/raft_watch.h"

namespace platformctl::dlq {
namespace {

using platformctl::nats_admin::Replica;
using platformctl::nats_admin::ReplicaSet;
using Clock = std::chrono::steady_clock;

constexpr auto kElectionWait = std::chrono::seconds(20);
constexpr auto kCatchUpWait = std::chrono::seconds(60);

struct Checked {
  bool checked = false;
  uint64_t stored = 0;
  std::vector<uint64_t> stored_seqs;  // the first few
  std::string error;
};

// Re-reads the replicas until `done` holds or `wait` passes; the last reading.
common::Result<ReplicaSet> WaitReplicas(RunEnv& env, const QueueInfo& q,
                                        const std::function<bool(const ReplicaSet&)>& done,
                                        Clock::duration wait) {
  const auto until = Clock::now() + wait;
  while (true) {
    auto rs = platformctl::nats_admin::ReadReplicas(env.client, q.dlq_stream);
    if (!rs) return rs;
    if (done(*rs) || Clock::now() >= until || env.stop.stopping()) return rs;
    env.stop.WaitFor(std::chrono::milliseconds(250));
  }
}

std::string ReplicaState(const Replica& r) {
  if (r.offline) return "offline";
  if (!r.current || r.lag > 0) return "behind (" + std::to_string(r.lag) + " log entries)";
  return "current";
}

// The walk's ops on nats-server's JetStream API; Ask keeps each leader's answer in `checked`.
class NatsTourOps final : public LeaderTourOps {
 public:
  NatsTourOps(RunEnv& env, const QueueInfo& q, const std::vector<uint64_t>& seqs,
              std::map<std::string, Checked>& checked)
      : env_(env), q_(q), seqs_(seqs), checked_(checked) {}

  common::Result<ReplicaSet> ReadWithLeader() override {
    return WaitReplicas(
        env_, q_, [](const ReplicaSet& r) { return !r.Leader().empty(); }, kElectionWait);
  }
  common::Result<ReplicaSet> Read() override {
    return platformctl::nats_admin::ReadReplicas(env_.client, q_.dlq_stream);
  }
  common::Status Ask(const std::string& leader) override {
    const common::Millis timeout(env_.client.request_timeout_ms());
    auto got = platformctl::nats_dlq::GetAll(env_.client, q_.dlq_stream, seqs_, timeout);
    Checked c;
    c.checked = true;
    for (size_t i = 0; i < got.size(); ++i) {
      if (!got[i]) return got[i].error();
      if (*got[i]) {
        ++c.stored;
        if (c.stored_seqs.size() < 10) c.stored_seqs.push_back(seqs_[i]);
      }
    }
    checked_[leader] = std::move(c);
    return common::Status::Ok();
  }
  common::Status StepDown() override {
    return platformctl::nats_admin::StepDown(env_.client, q_.dlq_stream);
  }
  common::Result<ReplicaSet> WaitMovedFrom(const std::string& from) override {
    return WaitReplicas(
        env_, q_, [&](const ReplicaSet& r) { return !r.Leader().empty() && r.Leader() != from; },
        kElectionWait);
  }
  TourClock::time_point Now() override { return TourClock::now(); }
  bool Stopping() override { return env_.stop.stopping(); }

 private:
  RunEnv& env_;
  const QueueInfo& q_;
  const std::vector<uint64_t>& seqs_;
  std::map<std::string, Checked>& checked_;
};

// The peer removal was refused: the replica keeps its copy. Says so and what the operator can do
// instead (tests/cluster/ctl_erasure_test.cpp does it on nats-server 2.15.1); exit 1.
int RefusedRebuild(RunEnv& env, const QueueInfo& q, const std::string& replica,
                   const std::string& answer, bool json) {
  auto g = platformctl::nats_admin::FindRaftGroup(env.client, q.dlq_stream);
  const std::string account = g ? g->account : "<the JetStream account>";
  const std::string group = g ? g->group : "<its raft group>";
  const std::string holds =
      replica + " is still a replica of " + q.dlq_stream +
      ": nothing was deleted, and its block files keep the bytes of every message it removed "
      "without overwriting (those it caught up on from a snapshot)";
  const std::string instead =
      "stop nats-server on " + replica + ", delete its copy of the stream and its raft group (in " +
      "its JetStream store directory: " + account + "/streams/" + q.dlq_stream + " and $SYS/_js_/" +
      group + "), start it again: it is rebuilt from a snapshot of the leader; then check with " +
      "platformctl dlq verify";
  if (json) {
    nlohmann::json j = {{"command", "rebuild"}, {"stream", q.dlq_stream}, {"removed", false},
                        {"replica", replica},   {"answer", answer},       {"holds", holds},
                        {"instead", instead},   {"account", account},     {"group", group}};
    env.out << platformctl::DumpJson(j) << "\n";
  } else {
    env.out << "rebuild " << q.dlq_stream << ": NOT DONE: nats-server refused to remove " << replica
            << " (" << answer << ")\n"
            << holds << "\nto rebuild it instead: " << instead << "\n"
            << "rebuild not done: exit code 1\n";
  }
  return 1;
}

}  // namespace

int RunVerify(RunEnv& env, const QueueInfo& q, const std::vector<uint64_t>& seqs,
              std::optional<uint64_t> raft_index, const std::vector<std::string>& not_erased,
              bool json) {
  auto rs = platformctl::nats_admin::ReadReplicas(env.client, q.dlq_stream);
  if (!rs) return Fail(env, rs.error());
  std::map<std::string, Checked> checked;
  NatsTourOps ops(env, q, seqs, checked);
  int moves = 0;
  std::string final_leader = rs->Leader();
  if (!rs->raft) {
    final_leader = final_leader.empty() ? "this server" : final_leader;
    if (auto s = ops.Ask(final_leader); !s) return Fail(env, s.error());
  } else {
    auto walk = WalkLeaders(ops, TourLimits{});
    if (!walk) return Fail(env, walk.error());
    *rs = std::move(walk->last);
    moves = walk->moves;
    final_leader = walk->final_leader;
    // An answer from a replica that lost the leadership before it answered does not count.
    std::erase_if(checked, [&](const auto& kv) { return !walk->asked.count(kv.first); });
  }

  // Every configured replica must have been asked and hold none of them.
  bool ok = static_cast<int>(rs->peers.size()) >= rs->configured || !rs->raft;
  nlohmann::json jr = nlohmann::json::array();
  std::vector<std::string> lines;
  std::vector<std::string> names;
  for (const auto& p : rs->peers) names.push_back(p.name);
  if (!rs->raft && names.empty()) names.push_back("this server");
  for (const auto& name : names) {
    const Replica* p = nullptr;
    for (const auto& r : rs->peers) {
      if (r.name == name) p = &r;
    }
    auto it = checked.find(name);
    std::string line = name + ": ";
    nlohmann::json j = {{"name", name}, {"checked", it != checked.end()}};
    if (it == checked.end()) {
      ok = false;
      std::string why = p == nullptr ? "unknown" : p->leader ? "never answered" : ReplicaState(*p);
      line += "NOT CHECKED: " + why;
      j["state"] = why;
    } else if (it->second.stored > 0) {
      ok = false;
      std::string some;
      for (uint64_t s : it->second.stored_seqs)
        some += (some.empty() ? "" : ", ") + std::to_string(s);
      line += "answered as leader: " + std::to_string(it->second.stored) + " of them STORED (seq " +
              some + (it->second.stored > it->second.stored_seqs.size() ? ", ..." : "") + ")";
      j["stored"] = it->second.stored;
      j["stored_seqs"] = it->second.stored_seqs;
    } else {
      line += "answered as leader: none of them is stored";
      j["stored"] = 0;
    }
    lines.push_back(std::move(line));
    jr.push_back(std::move(j));
  }
  std::vector<std::string> unseen;
  for (const auto& name : not_erased) {
    ok = false;
    unseen.push_back(Printable(name) +
                     " did not erase them during the erasure (it was down or behind): if it "
                     "caught up from a snapshot its block files keep their bytes, which no answer "
                     "shows; rebuild it (platformctl dlq rebuild --queue " +
                     q.name + " --replica " + Printable(name) +
                     " --yes, as the provisioning user), then verify without --not-erased-on");
  }
  if (rs->raft && not_erased.empty()) {
    unseen.push_back(
        "a replica that was down or behind during the erasure and caught up from a snapshot "
        "reports them deleted but keeps their bytes in its block files: rebuild it "
        "(platformctl dlq rebuild --queue " +
        q.name + " --replica <name> --yes, as the provisioning user)");
  }
  // The raft logs, after the tour (the step-downs add entries, but after the erasure's).
  std::vector<raft::LogCheck> logs;
  std::string again =
      "platformctl dlq verify --queue " + q.name + " --seqs " + FormatSeqRanges(seqs);
  std::string unerased;
  for (const auto& name : not_erased) unerased += (unerased.empty() ? "" : ",") + Printable(name);
  if (rs->raft) {
    logs.push_back(MarkRaftLog(env, q.dlq_stream, raft_index));
    WaitRaftLogs(env, logs);
    if (logs.front().erased_at > 0) {
      again += " --raft-index " + std::to_string(logs.front().erased_at);
    }
    if (!unerased.empty()) again += " --not-erased-on " + unerased;
    for (auto& s : RaftLogNotYet(logs.front(), again)) {
      ok = false;
      unseen.push_back(std::move(s));
    }
  }
  if (static_cast<int>(rs->peers.size()) < rs->configured && rs->raft) {
    unseen.push_back(q.dlq_stream + " has " + std::to_string(rs->peers.size()) + " of its " +
                     std::to_string(rs->configured) + " replicas");
  }
  const std::string range = FormatSeqRanges(seqs);
  if (json) {
    nlohmann::json j = {
        {"command", "verify"},   {"queue", q.name},       {"stream", q.dlq_stream},
        {"seqs", range},         {"count", seqs.size()},  {"configured", rs->configured},
        {"replicas", jr},        {"leader_moves", moves}, {"leader", final_leader},
        {"not_visible", unseen}, {"verified", ok},        {"not_erased_on", not_erased}};
    j["raft_logs"] = nlohmann::json::array();
    for (const auto& c : logs) j["raft_logs"].push_back(nlohmann::json::parse(RaftLogJson(c)));
    env.out << platformctl::DumpJson(j) << "\n";
  } else {
    env.out << "verify " << q.dlq_stream << " seq "
            << (range.size() > 200 ? range.substr(0, 200) + "..." : range) << " (" << seqs.size()
            << " sequence" << (seqs.size() == 1 ? "" : "s") << "), " << rs->configured << " replica"
            << (rs->configured == 1 ? "" : "s") << " configured:\n";
    for (const auto& l : lines) env.out << "  " << l << "\n";
    if (moves > 0) {
      env.out << "(the leadership of " << q.dlq_stream << " moved " << moves << " time"
              << (moves == 1 ? "" : "s") << " for this; it is on " << final_leader << " now)\n";
    }
    if (!logs.empty()) {
      env.out << "raft logs:\n";
      for (const auto& c : logs) {
        for (const auto& l : RaftLogLines(c)) env.out << "  " << l << "\n";
      }
    }
    if (!unseen.empty()) {
      env.out << "not yet true, or what the servers' answers cannot show:\n";
      for (const auto& s : unseen) env.out << "  - " << s << "\n";
    }
    env.out << (ok ? std::string("verified: every replica answered that none of them is stored") +
                         (logs.empty() ? ""
                                       : ", and every raft log is compacted past the erasure") +
                         "\n"
                   : std::string("verify incomplete: exit code 1\n"));
  }
  return ok ? 0 : 1;
}

int RunRebuild(RunEnv& env, const QueueInfo& q, const std::string& replica, bool yes, bool json) {
  auto rs = platformctl::nats_admin::ReadReplicas(env.client, q.dlq_stream);
  if (!rs) return Fail(env, rs.error());
  auto refuse = [&](const std::string& why) {
    env.err << "platformctl: dlq rebuild: " << why << "\n";
    return 1;
  };
  if (!rs->raft)
    return refuse(q.dlq_stream + " has one replica: there is nothing to rebuild it from");
  const Replica* target = nullptr;
  for (const auto& p : rs->peers) {
    if (p.name == replica) target = &p;
  }
  if (target == nullptr) {
    std::string names;
    for (const auto& p : rs->peers) names += (names.empty() ? "" : ", ") + p.name;
    return refuse("'" + Printable(replica) + "' is not a replica of " + q.dlq_stream + " (" +
                  names + ")");
  }
  for (const auto& p : rs->peers) {
    if (p.name != replica && !(p.leader || (p.current && !p.offline && p.lag == 0))) {
      return refuse("the other replicas must be current first (" + p.name + " is not): removing " +
                    replica + " now could leave " + q.dlq_stream + " without a majority");
    }
  }
  if (!yes) {
    env.out << "would remove " << replica << " from the replicas of " << q.dlq_stream
            << " (nats-server deletes its copy of the stream and its raft log) and add a replica "
               "back, rebuilt from a snapshot of the leader; "
            << q.dlq_stream << " runs on " << rs->peers.size() - 1
            << " replicas meanwhile\nnothing was changed: run the same command with --yes (exit "
               "code 4)\n";
    return kExitNotConfirmed;
  }
  const auto start = Clock::now();
  if (target->leader) {
    if (auto s = platformctl::nats_admin::StepDown(env.client, q.dlq_stream); !s)
      return Fail(env, s.error());
    auto moved = WaitReplicas(
        env, q, [&](const ReplicaSet& r) { return !r.Leader().empty() && r.Leader() != replica; },
        kElectionWait);
    if (!moved) return Fail(env, moved.error());
  }
  if (auto s = platformctl::nats_admin::RemovePeer(env.client, q.dlq_stream, replica); !s) {
    // RemovePeer read the replicas back: still one means the server refused (nats-server 2.15
    // does when no other server can take its place) and nothing was deleted.
    auto now = platformctl::nats_admin::ReadReplicas(env.client, q.dlq_stream);
    const bool kept = now && std::any_of(now->peers.begin(), now->peers.end(),
                                         [&](const Replica& p) { return p.name == replica; });
    if (!kept) return Fail(env, s.error());
    return RefusedRebuild(env, q, replica, s.error().message, json);
  }
  auto gone = WaitReplicas(
      env, q,
      [&](const ReplicaSet& r) {
        return std::none_of(r.peers.begin(), r.peers.end(),
                            [&](const Replica& p) { return p.name == replica; });
      },
      kElectionWait);
  if (!gone) return Fail(env, gone.error());
  const int configured = rs->configured;
  if (static_cast<int>(gone->peers.size()) < configured) {
    // nats-server 2.9 adds a replica back only when the count changes: down by one, then up.
    if (auto s = platformctl::nats_admin::SetReplicas(env.client, q.dlq_stream, configured - 1);
        !s) {
      return Fail(env, s.error());
    }
    if (auto s = platformctl::nats_admin::SetReplicas(env.client, q.dlq_stream, configured); !s) {
      return Fail(env, s.error());
    }
  }
  auto after = WaitReplicas(
      env, q, [](const ReplicaSet& r) { return r.AllCurrent(); }, kCatchUpWait);
  if (!after) return Fail(env, after.error());
  const bool ok = after->AllCurrent();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::string names;
  for (const auto& p : after->peers) {
    names += (names.empty() ? "" : ", ") + p.name + (p.leader ? " (leader)" : "") +
             (Usable(p) && p.lag == 0 ? "" : " " + ReplicaState(p));
  }
  if (json) {
    nlohmann::json j = {
        {"command", "rebuild"},       {"stream", q.dlq_stream}, {"removed", replica},
        {"replicas", names},          {"current", ok},          {"seconds", seconds},
        {"messages", after->messages}};
    env.out << platformctl::DumpJson(j) << "\n";
  } else {
    env.out << "rebuild " << q.dlq_stream << ": removed " << replica
            << " (its copy and raft log deleted) and added a replica back in "
            << static_cast<int64_t>(seconds + 0.5) << " s; replicas now: " << names << "\n";
    if (ok) {
      env.out << "the new replica was built from a snapshot of the leader: its block files hold "
                 "the "
              << after->messages
              << " messages the stream holds and none of what was erased before, and its raft "
                 "log begins after that snapshot; check with the erasure's platformctl dlq "
                 "verify command, without --not-erased-on "
              << replica << "\n";
    } else {
      env.out << "not every replica is current yet: check again with platformctl dlq verify "
                 "(exit code 1)\n";
    }
  }
  return ok ? 0 : 1;
}

}  // namespace platformctl::dlq
