// `platformctl dlq verify`'s walk through a stream's leadership: a message get is answered by
// the stream's leader only, so to ask every replica the walk asks the leader, moves the
// leadership with a step-down, and goes on until every usable replica has answered as leader or
// a bound is reached.
//
// The walk decides; LeaderTourOps talks to the cluster. dlq/verify.cpp implements the ops on
// nats-server's JetStream API; tests/platformctl/leader_tour_test.cpp implements them on a model
// of how nats-server 2.9 picks the next leader, so the bounds are tested without a cluster.
// Runs on the calling thread; the ops are borrowed for the call.
#pragma once

#include <chrono>
#include <set>
#include <string>

#include "common/result.h"
#include "platformctl/nats_admin.h"

namespace platformctl::dlq {

using TourClock = std::chrono::steady_clock;

struct TourLimits {
  // nats-server 2.9 hands the leadership to the first healthy follower in its peer map's
  // iteration order, and Go starts a small map's iteration at a random one of 8 slots: one
  // follower can be picked 7 times in 8, and two replicas can pass the leadership back and forth
  // while the third waits. At 1 in 8 per move, 96 moves miss a replica with a probability of
  // about 3e-6; a move takes about half a second, and the time bound caps a walk whose replica
  // is never picked at all.
  int max_moves = 96;
  TourClock::duration moves_wait = std::chrono::seconds(60);
};

// A replica that can answer as leader: the leader, or a current follower that is online.
bool Usable(const nats_admin::Replica& r);

// What the walk needs from the cluster. Every call may block; none is called concurrently.
class LeaderTourOps {
 public:
  virtual ~LeaderTourOps() = default;
  // A reading that names a leader, or the last reading once the election wait has passed.
  virtual common::Result<nats_admin::ReplicaSet> ReadWithLeader() = 0;
  // One reading, to see whether the leadership moved while the leader answered.
  virtual common::Result<nats_admin::ReplicaSet> Read() = 0;
  // Asks the current leader, `leader`, what it stores, and keeps the answer under its name.
  virtual common::Status Ask(const std::string& leader) = 0;
  virtual common::Status StepDown() = 0;
  // A reading whose leader is not `from`, or the last reading once the election wait passed.
  virtual common::Result<nats_admin::ReplicaSet> WaitMovedFrom(const std::string& from) = 0;
  virtual TourClock::time_point Now() = 0;
  virtual bool Stopping() = 0;
};

struct TourResult {
  nats_admin::ReplicaSet last;  // the last reading
  std::set<std::string> asked;  // answered as leader, and still leader after it answered
  int moves = 0;                // step-downs asked for
  std::string final_leader;     // the leader of the last reading ("" while none)
};

// The walk for a replicated stream (ReplicaSet::raft). An answer given by a replica that had
// lost the leadership by the time it answered is not counted (Ask again when it leads again).
common::Result<TourResult> WalkLeaders(LeaderTourOps& ops, const TourLimits& limits);

}  // namespace platformctl::dlq
