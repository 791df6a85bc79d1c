#include "common/topology.h"

#include "common/dead_letter.h"

#include <catch2/catch.hpp>

using namespace common::topology;
using A = StreamPlan::Action;

namespace {
StreamSettings Find(const std::vector<StreamSettings>& all, const std::string& name) {
  for (const auto& s : all) {
    if (s.name == name) return s;
  }
  FAIL("no stream " << name);
  return {};
}
}  // namespace

TEST_CASE("the desired topology follows the contract (docs/contract.md §2)", "[topology]") {
  common::TopologyConfig c;
  auto all = Desired(c);
  REQUIRE(all.size() == 9);
  auto web = Find(all, "WEB_EVENTS");
  CHECK(web.subjects == std::vector<std::string>{"web.events.*"});
  CHECK(web.retention == Retention::kWorkQueue);
  CHECK(web.max_age == std::chrono::hours(72));
  auto api = Find(all, "API_METRICS");
  CHECK(api.subjects == std::vector<std::string>{"api.metrics.*"});
  CHECK(api.retention == Retention::kWorkQueue);
  auto wdlq = Find(all, "WEB_DLQ");
  CHECK(wdlq.subjects == std::vector<std::string>{"dlq.web.*"});
  CHECK(wdlq.retention == Retention::kLimits);
  CHECK(wdlq.max_age == std::chrono::hours(24 * 7));
  auto adlq = Find(all, "API_DLQ");
  CHECK(adlq.max_age == std::chrono::hours(24 * 30));
  auto locks = Find(all, "KV_locks");
  CHECK(locks.bucket == "locks");
  CHECK(locks.max_age == c.lock_ttl);
  CHECK(locks.duplicate_window <= locks.max_age);
  auto tasks = Find(all, "KV_dlq_tasks");
  CHECK(tasks.bucket == "dlq_tasks");
  CHECK(tasks.max_age == std::chrono::hours(24 * 30));
  CHECK(tasks.max_msgs_per_subject == 1);
  auto guard = Find(all, "KV_crash_guard");
  CHECK(guard.bucket == "crash_guard");
  CHECK(guard.max_age == std::chrono::hours(24));
  for (const auto& s : all) CHECK(s.file_storage);
}

TEST_CASE("replicas come from the configuration", "[topology]") {
  common::TopologyConfig c;
  c.replicas = 3;
  for (const auto& s : Desired(c)) CHECK(s.replicas == 3);
}

TEST_CASE("plan: absent is created, equal is unchanged", "[topology]") {
  auto want = Desired(common::TopologyConfig{}).front();
  CHECK(PlanStream(want, std::nullopt).action == A::kCreate);
  auto plan = PlanStream(want, want);
  CHECK(plan.action == A::kUnchanged);
  CHECK(plan.changes.empty());
}

TEST_CASE("plan: updatable differences are listed", "[topology]") {
  auto want = Desired(common::TopologyConfig{}).front();
  auto have = want;
  have.max_age = std::chrono::hours(24);
  have.replicas = 3;
  auto plan = PlanStream(want, have);
  CHECK(plan.action == A::kUpdate);
  REQUIRE(plan.changes.size() == 2);
  CHECK(plan.changes[0] == "replicas 3 -> 1");
  CHECK(plan.changes[1] == "max age 1d -> 3d");
}

// Issue 35: a bucket nats.c creates allows rollup headers, so one publish with Nats-Rollup: all
// to a user's own key emptied the bucket (every lease in `locks`). init turns them off.
TEST_CASE("plan: no stream or bucket allows rollup headers", "[topology]") {
  for (const auto& want : Desired(common::TopologyConfig{})) {
    CHECK_FALSE(want.allow_rollup);
    auto have = want;
    have.allow_rollup = true;
    auto plan = PlanStream(want, have);
    CHECK(plan.action == A::kUpdate);
    CHECK(plan.changes == std::vector<std::string>{"rollup headers allowed -> refused"});
  }
}

TEST_CASE("plan: retention, storage or foreign subjects conflict", "[topology]") {
  auto want = Desired(common::TopologyConfig{}).front();
  auto have = want;
  have.retention = Retention::kLimits;
  auto plan = PlanStream(want, have);
  CHECK(plan.action == A::kConflict);
  CHECK(plan.changes.at(0) == "retention is limits, expected work queue");

  have = want;
  have.file_storage = false;
  CHECK(PlanStream(want, have).action == A::kConflict);

  have = want;
  have.subjects = {"web.events.*", "other.>"};
  plan = PlanStream(want, have);
  CHECK(plan.action == A::kConflict);
  CHECK(plan.changes.at(0).find("other.>") != std::string::npos);

  // Missing subjects (a subset) are added, not a conflict.
  have = want;
  have.subjects = {};
  CHECK(PlanStream(want, have).action == A::kUpdate);
}

TEST_CASE("the work-queue streams leave the DLQ headers room below the max payload", "[topology]") {
  const int64_t max_payload = 8 * 1024 * 1024;
  auto all = Desired(common::TopologyConfig{}, max_payload);
  const int64_t want = max_payload - common::dead_letter::kHeaderRoom;
  CHECK(WorkQueueMaxMsgSize(max_payload) == want);
  CHECK(Find(all, "WEB_EVENTS").max_msg_size == want);
  CHECK(Find(all, "API_METRICS").max_msg_size == want);
  CHECK(Find(all, "WEB_DLQ").max_msg_size == -1);
  CHECK(Find(all, "API_DLQ").max_msg_size == -1);
  CHECK(Find(all, "KV_locks").max_msg_size == -1);
  // Without a max payload nothing is limited (and the room must exist to be left).
  CHECK(Find(Desired(common::TopologyConfig{}), "WEB_EVENTS").max_msg_size == -1);
  CHECK(WorkQueueMaxMsgSize(common::dead_letter::kHeaderRoom) == 0);
  CHECK(WorkQueueMaxMsgSize(0) == 0);

  auto web = Find(all, "WEB_EVENTS");
  auto have = web;
  have.max_msg_size = -1;
  auto plan = PlanStream(web, have);
  CHECK(plan.action == A::kUpdate);
  REQUIRE(plan.changes.size() == 1);
  CHECK(plan.changes[0] == "max message size unlimited -> " + std::to_string(want));
  CHECK(PlanStream(web, web).action == A::kUnchanged);
  // A DLQ someone limited is brought back to unlimited: its copies need the whole max payload.
  auto dlq = Find(all, "WEB_DLQ");
  have = dlq;
  have.max_msg_size = 1024;
  CHECK(PlanStream(dlq, have).changes ==
        std::vector<std::string>{"max message size 1024 -> unlimited"});
}

TEST_CASE("storage limits: every stream and bucket has one, and refuses when full", "[topology]") {
  common::TopologyConfig c;
  c.web_events_max_bytes = 256 << 10;
  c.api_metrics_max_bytes = int64_t{3} << 30;
  c.web_dlq_max_bytes = int64_t{1} << 30;
  c.api_dlq_max_bytes = int64_t{2} << 30;
  c.visit_state_max_bytes = int64_t{100} << 20;
  c.stored_ids_max_bytes = int64_t{5} << 30;
  auto all = Desired(c);
  CHECK(Find(all, "WEB_EVENTS").max_bytes == 256 << 10);
  CHECK(Find(all, "API_METRICS").max_bytes == int64_t{3} << 30);
  CHECK(Find(all, "WEB_DLQ").max_bytes == int64_t{1} << 30);
  CHECK(Find(all, "API_DLQ").max_bytes == int64_t{2} << 30);
  CHECK(Find(all, "KV_visit_state").max_bytes == int64_t{100} << 20);
  CHECK(Find(all, "KV_replayer_stored").max_bytes == int64_t{5} << 30);
  CHECK(Find(all, "KV_locks").max_bytes == kLocksMaxBytes);
  CHECK(Find(all, "KV_dlq_tasks").max_bytes == kDlqTasksMaxBytes);
  CHECK(Find(all, "KV_crash_guard").max_bytes == kCrashGuardMaxBytes);
  // A full work queue refuses the edge (nothing stored is lost), a full DLQ the service's
  // dead-letter publish (never an older dead letter dropped), a full bucket a new key.
  for (const auto& s : all) {
    CHECK(s.max_bytes > 0);
    CHECK(s.discard == Discard::kNew);
  }
  CHECK(ReservedBytes(all) == (256 << 10) + (int64_t{11} << 30) + (int64_t{100} << 20) +
                                  kLocksMaxBytes + kDlqTasksMaxBytes + kCrashGuardMaxBytes);
  // The defaults: 12.5 GiB of streams and traffic buckets and 129 MiB of fixed buckets.
  CHECK(ReservedBytes(Desired(common::TopologyConfig{})) ==
        (int64_t{25} << 29) + (int64_t{129} << 20));
}

TEST_CASE("plan: a stream without its limit is updated, and says so", "[topology]") {
  auto want = Find(Desired(common::TopologyConfig{}), "WEB_EVENTS");
  auto have = want;
  have.max_bytes = -1;
  have.discard = Discard::kOld;
  auto plan = PlanStream(want, have);
  CHECK(plan.action == A::kUpdate);
  REQUIRE(plan.changes.size() == 2);
  CHECK(plan.changes[0] == "max bytes unlimited -> 4GiB");
  CHECK(plan.changes[1] == "when full, discard old (drop oldest) -> new (refuse)");
  have = want;
  have.max_bytes = int64_t{1} << 30;
  plan = PlanStream(want, have);
  REQUIRE(plan.changes.size() == 1);
  CHECK(plan.changes[0] == "max bytes 1GiB -> 4GiB");
}

TEST_CASE("plan: a limit below what the stream holds is a conflict, never applied", "[topology]") {
  auto want = Find(Desired(common::TopologyConfig{}), "WEB_EVENTS");  // 4GiB
  auto have = want;
  have.max_bytes = -1;
  CHECK(LowersMaxBytes(want, have));
  const int64_t held = (int64_t{5} << 30) + 7;
  auto plan = PlanStream(want, have, held);
  CHECK(plan.action == A::kConflict);
  REQUIRE(plan.changes.size() == 1);
  CHECK(plan.changes[0] ==
        "max bytes 4GiB is below the " + std::to_string(held) +
            " bytes it holds: JetStream would delete its oldest messages to fit (let it drain "
            "below the limit, or raise the limit)");
  // Holding less, it is an update; raising a limit never needs the reading.
  CHECK(PlanStream(want, have, int64_t{1} << 30).action == A::kUpdate);
  have.max_bytes = int64_t{2} << 30;
  CHECK_FALSE(LowersMaxBytes(want, have));
  CHECK(PlanStream(want, have).action == A::kUpdate);
  have.max_bytes = int64_t{8} << 30;
  CHECK(LowersMaxBytes(want, have));
}
