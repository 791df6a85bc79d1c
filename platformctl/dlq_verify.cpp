#include "platformctl/dlq_verify.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>

#include <nlohmann/json.hpp>

#include "platformctl/leader_tour.h"
#include "platformctl/nats_admin.h"
#include "platformctl/nats_dlq.h"

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

std::string Dump(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

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

std::string StateOf(const Replica& r) {
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

}  // namespace

int RunVerify(RunEnv& env, const QueueInfo& q, const std::vector<uint64_t>& seqs, bool json) {
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
      std::string why = p == nullptr ? "unknown" : p->leader ? "never answered" : StateOf(*p);
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
  if (rs->raft) {
    unseen.push_back(
        "a replica that was down or behind during the erasure and caught up from a snapshot "
        "reports them deleted but keeps their bytes in its block files: rebuild it "
        "(platformctl dlq rebuild --queue " +
        q.name + " --replica <name> --yes, as the provisioning user)");
    unseen.push_back(RaftLogSentence(q));
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
        {"not_visible", unseen}, {"verified", ok}};
    env.out << Dump(j) << "\n";
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
    if (!unseen.empty()) {
      env.out << "what the servers' answers cannot show:\n";
      for (const auto& s : unseen) env.out << "  - " << s << "\n";
    }
    env.out << (ok ? "verified: every replica answered that none of them is stored\n"
                   : "verify incomplete: exit code 1\n");
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
    return Fail(env, s.error());
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
             (Usable(p) && p.lag == 0 ? "" : " " + StateOf(p));
  }
  if (json) {
    nlohmann::json j = {
        {"command", "rebuild"},       {"stream", q.dlq_stream}, {"removed", replica},
        {"replicas", names},          {"current", ok},          {"seconds", seconds},
        {"messages", after->messages}};
    env.out << Dump(j) << "\n";
  } else {
    env.out << "rebuild " << q.dlq_stream << ": removed " << replica
            << " (its copy and raft log deleted) and added a replica back in "
            << static_cast<int64_t>(seconds + 0.5) << " s; replicas now: " << names << "\n";
    if (ok) {
      env.out << "the new replica was built from a snapshot of the leader: its block files hold "
                 "the "
              << after->messages
              << " messages the stream holds and none of what was erased before; its raft log, "
                 "like the others', holds what the stream stored since the leader's last snapshot "
                 "until its own next one (within 3 minutes)\n";
    } else {
      env.out << "not every replica is current yet: check again with platformctl dlq verify "
                 "(exit code 1)\n";
    }
  }
  return ok ? 0 : 1;
}

}  // namespace platformctl::dlq
