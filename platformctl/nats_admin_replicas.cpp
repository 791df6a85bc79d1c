// platformctl's replica operations (nats_admin.h): reading a stream's replica set back, and the
// changes to it (a leader step-down, a peer removal), each judged by what the server did, read
// back, not by its answer alone.
#include <algorithm>
#include <chrono>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/js_error.h"
#include "platformctl/json_whole.h"
#include "platformctl/nats_admin.h"

namespace platformctl::nats_admin {
namespace {

using json_whole::CountAt;
using json_whole::StringAt;
using json_whole::WholeAt;

}  // namespace

std::string ReplicaSet::Leader() const {
  for (const auto& p : peers) {
    if (p.leader) return p.name;
  }
  return "";
}

bool ReplicaSet::AllCurrent() const {
  if (static_cast<int>(peers.size()) < configured) return false;
  return std::all_of(peers.begin(), peers.end(), [](const Replica& p) {
    return p.leader || (p.current && !p.offline && p.lag == 0);
  });
}

Result<ReplicaSet> ParseReplicas(std::string_view answer) {
  auto j = nlohmann::json::parse(answer, nullptr, false);
  if (!j.is_object() || !j.contains("config") || !j.contains("state")) {
    return Error::Permanent("stream info: an answer that is not JetStream's");
  }
  ReplicaSet rs;
  rs.configured = static_cast<int>(WholeAt<int64_t>(j["config"], "num_replicas").value_or(1));
  const auto& st = j["state"];
  rs.messages = CountAt(st, "messages");
  rs.first_seq = CountAt(st, "first_seq");
  rs.last_seq = CountAt(st, "last_seq");
  rs.num_deleted = CountAt(st, "num_deleted");
  auto cl = j.find("cluster");
  // One replica (alone or in a cluster) has no raft group in nats-server 2.9: its store is all.
  rs.raft = rs.configured > 1;
  if (cl == j.end() || !cl->is_object()) return rs;
  std::string leader = StringAt(*cl, "leader");
  if (!leader.empty()) {
    Replica l;
    l.name = leader;
    l.leader = true;
    l.current = true;
    rs.peers.push_back(l);
  }
  auto reps = cl->find("replicas");
  if (reps != cl->end() && reps->is_array()) {
    for (const auto& r : *reps) {
      if (!r.is_object()) continue;
      Replica p;
      p.name = StringAt(r, "name");
      p.current = r.value("current", false);
      p.offline = r.value("offline", false);
      p.lag = CountAt(r, "lag");
      p.active_seconds_ago = static_cast<double>(WholeAt<int64_t>(r, "active").value_or(0)) / 1e9;
      rs.peers.push_back(p);
    }
  }
  return rs;
}

Result<ReplicaSet> ReadReplicas(NatsClient& client, const std::string& stream) {
  Patience patience;
  auto answer =
      ApiRequest(client, "$JS.API.STREAM.INFO." + stream, "", "stream info " + stream, patience);
  if (!answer) return answer.error();
  return ParseReplicas(*answer);
}

namespace {

Status Success(const Result<std::string>& answer, const std::string& what) {
  if (!answer) return answer.error();
  auto j = nlohmann::json::parse(*answer, nullptr, false);
  if (j.is_object() && j.value("success", false)) return Status::Ok();
  return Error::Permanent(what + ": an unexpected answer: " + answer->substr(0, 200));
}

}  // namespace

Status StepDown(NatsClient& client, const std::string& stream) {
  Patience patience;
  const std::string what = "step down the leader of " + stream;
  return Success(ApiRequest(client, "$JS.API.STREAM.LEADER.STEPDOWN." + stream, "", what, patience),
                 what);
}

Status RemovePeer(NatsClient& client, const std::string& stream, const std::string& peer) {
  Patience patience;
  const std::string what = "remove " + peer + " from the replicas of " + stream;
  nlohmann::json body = {{"peer", peer}};
  auto answer =
      ApiRequest(client, "$JS.API.STREAM.PEER.REMOVE." + stream, body.dump(), what, patience);
  // 10075 "peer remap failed": no other server could take its place. 2.9 and 2.10 remove the
  // peer anyway, 2.15 does not: only the replicas read back below tell which happened.
  const bool remap_failed = !answer && answer.error().code == common::js_error::kPeerRemapFailed;
  if (!remap_failed) {
    if (Status s = Success(answer, what); !s) return s;
  }
  const std::string said = remap_failed ? answer.error().message : "success";
  // The server applies the removal through its meta group after answering: poll a while.
  const auto deadline = std::chrono::steady_clock::now() + kPeerRemovalWait;
  Status judged = Error::Permanent(what + ": the stream's replicas could not be read back");
  while (true) {
    auto rs = ReadReplicas(client, stream);
    if (rs) {
      judged = JudgePeerRemoval(stream, peer, *rs, said);
    } else {
      judged = Error{rs.error().kind,
                     what + ": answered " + said +
                         ", and reading the replicas back failed: " + rs.error().message};
    }
    if (judged || std::chrono::steady_clock::now() >= deadline) return judged;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
}

Status JudgePeerRemoval(const std::string& stream, const std::string& peer, const ReplicaSet& after,
                        const std::string& answer) {
  std::string names;
  bool still = false;
  for (const auto& p : after.peers) {
    names += (names.empty() ? "" : ", ") + p.name + (p.leader ? " (leader)" : "");
    still = still || p.name == peer;
  }
  if (!still) return Status::Ok();
  return Error::Permanent("nats-server did not remove " + peer + " from the replicas of " + stream +
                          " (it answered: " + answer + "): " + peer +
                          " is still a replica (replicas: " + names +
                          "), so its copy of the stream and its raft log were not deleted");
}

}  // namespace platformctl::nats_admin
