// dlq verify's walk through a stream's leadership (platformctl/leader_tour.h), on a model of
// nats-server 2.9: a step-down hands the leadership to the first healthy follower in the peer
// map's iteration order, which Go starts at a random one of 8 slots. Seeded: a failure names its
// seed and replays from it.
#include "platformctl/leader_tour.h"

#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <vector>

using namespace platformctl::dlq;
using platformctl::nats_admin::Replica;
using platformctl::nats_admin::ReplicaSet;

namespace {

class ModelCluster final : public LeaderTourOps {
 public:
  // `n` replicas r0..r(n-1); the peer map's slots hold them in a seeded order.
  ModelCluster(int n, uint32_t seed) : rng_(seed) {
    for (int i = 0; i < n; ++i) names_.push_back("r" + std::to_string(i));
    slot_of_.resize(n);
    for (int i = 0; i < n; ++i) slot_of_[i] = i;
    for (int i = n - 1; i > 0; --i) std::swap(slot_of_[i], slot_of_[rng_() % (i + 1)]);
    offline_.assign(n, false);
    leader_ = static_cast<int>(rng_() % n);
  }

  // Knobs for single scenarios.
  std::vector<bool> offline_;
  int never_elected = -1;     // this replica is skipped by every election
  int moves_while_asked = 0;  // the next N asks see the leadership move under them
  bool fail_step_down = false;
  bool stop_after_first_ask = false;
  TourClock::duration per_move = std::chrono::milliseconds(500);

  int asks = 0;
  std::vector<std::string> asked_order;

  common::Result<ReplicaSet> ReadWithLeader() override { return Reading(); }
  common::Result<ReplicaSet> Read() override { return Reading(); }
  common::Status Ask(const std::string& leader) override {
    REQUIRE(leader == names_[leader_]);  // the walk only asks the leader of its last reading
    ++asks;
    asked_order.push_back(leader);
    if (moves_while_asked > 0) {
      --moves_while_asked;
      Elect();
    }
    return common::Status::Ok();
  }
  common::Status StepDown() override {
    if (fail_step_down) return common::Error::Retryable("no answer from the leader");
    Elect();
    return common::Status::Ok();
  }
  common::Result<ReplicaSet> WaitMovedFrom(const std::string&) override { return Reading(); }
  TourClock::time_point Now() override { return now_; }
  bool Stopping() override { return stop_after_first_ask && asks > 0; }

 private:
  // nats-server 2.9: the first healthy follower from a random one of the map's 8 slots.
  void Elect() {
    now_ += per_move;
    const int n = static_cast<int>(names_.size());
    const int start = static_cast<int>(rng_() % 8);
    for (int k = 0; k < 8; ++k) {
      const int slot = (start + k) % 8;
      for (int i = 0; i < n; ++i) {
        if (slot_of_[i] != slot || i == leader_ || offline_[i] || i == never_elected) continue;
        leader_ = i;
        return;
      }
    }
  }
  ReplicaSet Reading() const {
    ReplicaSet rs;
    rs.configured = static_cast<int>(names_.size());
    rs.raft = true;
    for (int i = 0; i < static_cast<int>(names_.size()); ++i) {
      Replica r;
      r.name = names_[i];
      r.leader = i == leader_;
      r.current = !offline_[i];
      r.offline = offline_[i];
      if (r.leader) {
        rs.peers.insert(rs.peers.begin(), r);
      } else {
        rs.peers.push_back(r);
      }
    }
    return rs;
  }

  std::mt19937 rng_;  // its sequence is fixed by the standard: seeds replay anywhere
  std::vector<std::string> names_;
  std::vector<int> slot_of_;
  int leader_ = 0;
  TourClock::time_point now_{};
};

}  // namespace

TEST_CASE("LeaderTour: every replica answers within the bounds, however the server picks") {
  for (int n : {3, 5}) {
    for (uint32_t seed = 1; seed <= 2000; ++seed) {
      ModelCluster c(n, seed);
      auto walk = WalkLeaders(c, TourLimits{});
      INFO("replicas " << n << ", seed " << seed);
      REQUIRE(walk);
      REQUIRE(static_cast<int>(walk->asked.size()) == n);
      REQUIRE(c.asks == n);  // each asked once
      REQUIRE(walk->moves <= TourLimits{}.max_moves);
    }
  }
}

TEST_CASE("LeaderTour: the old bound of 4 moves a replica misses one on this model, as CI saw") {
  // The model must reproduce the failure the bound was raised for, or the test above proves
  // nothing about it: at 12 moves 106 of these 2,000 3-replica walks (5 %) leave a replica unasked.
  int missed = 0;
  for (uint32_t seed = 1; seed <= 2000; ++seed) {
    ModelCluster c(3, seed);
    auto walk = WalkLeaders(c, TourLimits{.max_moves = 12});
    REQUIRE(walk);
    if (walk->asked.size() < 3) ++missed;
  }
  CHECK(missed > 40);
}

TEST_CASE("LeaderTour: a replica that cannot lead is not waited for") {
  ModelCluster c(3, 7);
  const auto before = c.Read();
  REQUIRE(before);
  // Take a follower offline: it is not usable, so two answers complete the walk.
  const std::string off = before->peers[1].name;
  c.offline_[off.back() - '0'] = true;
  auto walk = WalkLeaders(c, TourLimits{});
  REQUIRE(walk);
  CHECK(walk->asked.size() == 2);
  CHECK(!walk->asked.count(off));
  CHECK(walk->moves < TourLimits{}.max_moves);
}

TEST_CASE("LeaderTour: an answer given while the leadership moved is asked for again") {
  ModelCluster c(3, 11);
  c.moves_while_asked = 1;
  auto walk = WalkLeaders(c, TourLimits{});
  REQUIRE(walk);
  CHECK(walk->asked.size() == 3);
  CHECK(c.asks == 4);  // the first answer did not count
}

TEST_CASE("LeaderTour: a replica never elected stops the walk at its bounds, not asked") {
  // 1 ms a move reaches the move bound first; 2 s a move reaches the minute first (30 moves).
  for (auto [per_move, moves] :
       {std::pair{TourClock::duration(std::chrono::milliseconds(1)), TourLimits{}.max_moves},
        std::pair{TourClock::duration(std::chrono::seconds(2)), 30}}) {
    ModelCluster c(3, 3);
    const auto first = c.Read();
    REQUIRE(first);
    c.never_elected = first->peers[2].name.back() - '0';
    c.per_move = per_move;
    auto walk = WalkLeaders(c, TourLimits{});
    REQUIRE(walk);
    CHECK(walk->moves == moves);
    CHECK(walk->asked.size() == 2);
    CHECK(!walk->asked.count(first->peers[2].name));
  }
}

TEST_CASE("LeaderTour: a stop ends the walk after the answer in hand, and so does an error") {
  SECTION("stop") {
    ModelCluster c(3, 5);
    c.stop_after_first_ask = true;
    auto walk = WalkLeaders(c, TourLimits{});
    REQUIRE(walk);
    CHECK(walk->asked.size() == 1);
    CHECK(walk->moves == 0);
  }
  SECTION("a step-down that fails") {
    ModelCluster c(3, 5);
    c.fail_step_down = true;
    auto walk = WalkLeaders(c, TourLimits{});
    REQUIRE(!walk);
    CHECK(walk.error().kind == common::ErrorKind::kRetryable);
  }
}
