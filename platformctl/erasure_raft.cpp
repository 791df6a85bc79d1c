#include "platformctl/erasure_raft.h"

#include <algorithm>
#include <set>

#include "platformctl/raft_watch.h"

namespace platformctl::dlq {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kPollEvery = std::chrono::seconds(3);

void Judge(RunEnv& env, raft::LogCheck& c) {
  platformctl::nats_admin::RaftGroup g{c.stream, c.account, c.group, {}};
  // The replicas now (a rebuild or a peer removal may have changed them since the mark).
  if (auto rs = platformctl::nats_admin::ReadReplicas(env.client, c.stream)) {
    for (const auto& p : rs->peers) g.replicas.push_back(p.name);
  } else {
    for (const auto& r : c.verdict.replicas) g.replicas.push_back(r.server);
  }
  auto states = platformctl::nats_admin::ReadRaftLogs(env.client, g);
  if (!states) {
    c.error = states.error().message;
    return;
  }
  c.error.clear();
  c.verdict = raft::JudgeLogs(g.replicas, *states, c.erased_at);
}

}  // namespace

raft::LogCheck MarkRaftLog(RunEnv& env, const std::string& stream, std::optional<uint64_t> at) {
  raft::LogCheck c;
  c.stream = stream;
  auto g = platformctl::nats_admin::FindRaftGroup(env.client, stream);
  if (!g) {
    c.error = g.error().message;
    return c;
  }
  c.account = g->account;
  c.group = g->group;
  auto states = platformctl::nats_admin::ReadRaftLogs(env.client, *g);
  if (!states) {
    c.error = states.error().message;
    return c;
  }
  c.erased_at = at ? *at : raft::HighestCommitted(*states);
  c.verdict = raft::JudgeLogs(g->replicas, *states, c.erased_at);
  return c;
}

void WaitRaftLogs(RunEnv& env, std::vector<raft::LogCheck>& checks) {
  const Clock::duration wait = env.raft_log_wait;
  // Marked (its index known) and not yet compacted on every replica that answers; a reading
  // that failed on the way is tried again.
  auto open = [](const raft::LogCheck& c) {
    return c.erased_at > 0 && (!c.error.empty() || !c.verdict.answered_compacted);
  };
  auto pending = [&] { return std::any_of(checks.begin(), checks.end(), open); };
  if (!pending() || wait.count() <= 0) return;
  const auto start = Clock::now();
  std::set<std::string> said;  // "stream/server" compacted lines already printed
  for (const auto& c : checks) {
    for (const auto& r : c.verdict.replicas) {
      if (r.state == raft::ReplicaLog::State::kCompacted) said.insert(c.stream + "/" + r.server);
    }
  }
  std::string names;
  for (const auto& c : checks) names += (names.empty() ? "" : ", ") + c.stream;
  env.err << "waiting up to " << std::chrono::duration_cast<std::chrono::seconds>(wait).count()
          << " s for the raft logs of " << names
          << " to be compacted past the erasure on every replica (nats-server snapshots each "
             "replica every 2 to 3 minutes)\n"
          << std::flush;
  while (pending() && Clock::now() - start < wait && !env.stop.stopping()) {
    env.stop.WaitFor(kPollEvery);
    for (auto& c : checks) {
      if (!open(c)) continue;
      Judge(env, c);
      for (const auto& r : c.verdict.replicas) {
        if (r.state != raft::ReplicaLog::State::kCompacted) continue;
        if (!said.insert(c.stream + "/" + r.server).second) continue;
        env.err << "  " << c.stream << " on " << r.server << ": raft log compacted past the erasure"
                << " after " << static_cast<int64_t>(SecondsSince(start) + 0.5) << " s\n"
                << std::flush;
      }
    }
  }
}

}  // namespace platformctl::dlq
