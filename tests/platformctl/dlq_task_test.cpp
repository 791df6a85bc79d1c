// Redrive tasks' records and decisions (platformctl/dlq/task.h), without NATS.
#include "platformctl/dlq/task.h"

#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

using namespace platformctl::dlq;

namespace {

TaskRecord Sample() {
  TaskRecord t;
  t.name = "after-incident_7";
  t.queue = "web";
  t.selection.reason = "health checks passed";
  t.selection.from = "2026-11-29T16:10:00Z";
  t.describe = "--reason 'health checks passed' --from 2026-11-29T16:10:00Z";
  t.rate = 500;
  t.to_subject = "web.events.quarantine";
  t.end_seq = 1200;
  t.next_seq = 345;
  t.counted_through = 360;
  t.replayed = 300;
  t.already = 2;
  t.skipped = 40;
  t.failed = 1;
  t.state = TaskState::kRunning;
  t.runner = "ops-1:4242";
  t.started_ms = 1'764'000'000'000;
  t.updated_ms = 1'764'000'060'000;
  return t;
}

}  // namespace

TEST_CASE("task: a record survives its encoding, field by field", "[dlq][task]") {
  TaskRecord t = Sample();
  auto back = DecodeTask(EncodeTask(t));
  REQUIRE(back);
  CHECK(back->name == t.name);
  CHECK(back->selection.reason == t.selection.reason);
  CHECK(back->selection.from == t.selection.from);
  CHECK_FALSE(back->selection.to);
  CHECK_FALSE(back->selection.all);
  CHECK(back->rate == 500);
  CHECK(back->to_subject == t.to_subject);
  CHECK(back->end_seq == 1200);
  CHECK(back->next_seq == 345);
  CHECK(back->counted_through == 360);
  CHECK(back->replayed == 300);
  CHECK(back->already == 2);
  CHECK(back->skipped == 40);
  CHECK(back->failed == 1);
  CHECK(back->state == TaskState::kRunning);
  CHECK(back->runner == t.runner);
  CHECK(back->updated_ms == t.updated_ms);
}

TEST_CASE("task: what is no record is refused, not half-read", "[dlq][task]") {
  CHECK_FALSE(DecodeTask(""));
  CHECK_FALSE(DecodeTask("[]"));
  CHECK_FALSE(DecodeTask("{\"v\":2}"));
  std::string good = EncodeTask(Sample());
  for (size_t n = 0; n < good.size(); n += 7) CHECK_FALSE(DecodeTask(good.substr(0, n)));
  std::string bad_state = good;
  bad_state.replace(bad_state.find("\"running\""), 9, "\"sleepy\"");
  CHECK_FALSE(DecodeTask(bad_state));
  std::string bad_name = good;
  bad_name.replace(bad_name.find("after-incident_7"), 16, "a b");
  CHECK_FALSE(DecodeTask(bad_name));
}

TEST_CASE("task: a whole-number field holding a float, a negative or too big a number is refused",
          "[dlq][task]") {
  // The KV bucket is writable by hand: a field is read only when it is an integer its type
  // holds. get<int> of 1.44e127 (found by tests/fuzz/fuzz_dlq) is undefined behaviour; 1.0
  // read as 1, -1 as 2^64-1 and 2^64-1 as a signed -1 before these were refused.
  const nlohmann::json good = nlohmann::json::parse(EncodeTask(Sample()));
  REQUIRE(DecodeTask(good.dump()));
  const std::vector<std::string> unsigned_fields = {
      "end_seq", "next_seq", "counted_through", "replayed", "already", "skipped", "failed"};
  const std::vector<std::string> signed_fields = {"started_ms", "updated_ms"};
  auto refused = [&](const std::string& field, const nlohmann::json& value) {
    nlohmann::json j = good;
    j[field] = value;
    auto t = DecodeTask(j.dump());
    INFO(j.dump());
    REQUIRE_FALSE(t);
    CHECK(t.error().message == "a task record with a missing or mistyped field");
  };
  for (const auto& field : unsigned_fields) {
    refused(field, 1.44e127);
    refused(field, 1.0);
    refused(field, 2.5);
    refused(field, -1);
    refused(field, "7");
    refused(field, nullptr);
  }
  for (const auto& field : signed_fields) {
    refused(field, 1.44e127);
    refused(field, -1e300);
    refused(field, 1.0);
    refused(field, std::numeric_limits<uint64_t>::max());
  }
  refused("v", 1.44e127);
  refused("v", 1.0);
  refused("v", uint64_t{1} << 32 | 1);  // an int holds none of it; cast, it read as 1
  // The largest of each type is still a number, and an optional field may be absent.
  nlohmann::json edge = good;
  edge["end_seq"] = std::numeric_limits<uint64_t>::max();
  edge["started_ms"] = std::numeric_limits<int64_t>::min();
  edge.erase("counted_through");
  auto t = DecodeTask(edge.dump());
  REQUIRE(t);
  CHECK(t->end_seq == std::numeric_limits<uint64_t>::max());
  CHECK(t->started_ms == std::numeric_limits<int64_t>::min());
  CHECK(t->counted_through == 0);
  nlohmann::json no_end = good;
  no_end.erase("end_seq");
  CHECK_FALSE(DecodeTask(no_end.dump()));
}

TEST_CASE("task: names are one KV key of plain characters", "[dlq][task]") {
  CHECK(ValidTaskName("redrive-2026_11_29"));
  CHECK_FALSE(ValidTaskName(""));
  CHECK_FALSE(ValidTaskName("a.b"));
  CHECK_FALSE(ValidTaskName("a b"));
  CHECK_FALSE(ValidTaskName("a*"));
  CHECK_FALSE(ValidTaskName(std::string(65, 'a')));
  CHECK(ValidTaskName(std::string(64, 'a')));
  CHECK_FALSE(ValidTaskName("\x1b[2J"));
}

TEST_CASE("task: a runner is gone after 30 s without a heartbeat, and who may resume and cancel",
          "[dlq][task]") {
  TaskRecord t = Sample();
  const int64_t at = t.updated_ms;
  CHECK_FALSE(RunnerGone(t, at + kTaskStaleMs));
  CHECK(RunnerGone(t, at + kTaskStaleMs + 1));
  CHECK(TaskStatus(t, at + 45'000) == "running, runner gone 45s");
  CHECK(TaskStatus(t, at + 1000) == "running");
  CHECK(ResumeRefusal(t, at + 1000).find("is alive") != std::string::npos);
  CHECK(ResumeRefusal(t, at + kTaskStaleMs + 1).empty());
  t.state = TaskState::kStopped;
  CHECK_FALSE(RunnerGone(t, at + 100'000));  // nobody runs it: nothing is gone
  CHECK(ResumeRefusal(t, at + 1000).empty());
  t.state = TaskState::kDone;
  CHECK_FALSE(ResumeRefusal(t, at).empty());
  t.state = TaskState::kCancelled;  // resumed where it was cancelled
  CHECK(ResumeRefusal(t, at).empty());
}

TEST_CASE("task: a cancelled task resumes unless another task took its DLQ meanwhile",
          "[dlq][task]") {
  TaskRecord cancelled = Sample(), other = Sample(), api = Sample();
  cancelled.state = TaskState::kCancelled;
  other.name = "later";
  api.name = "api-1";
  api.queue = "api";
  CHECK(ResumeBlockedBy(cancelled, {cancelled, api}).empty());
  CHECK(ResumeBlockedBy(cancelled, {cancelled, other, api}) == std::vector<std::string>{"later"});
  other.state = TaskState::kDone;
  CHECK(ResumeBlockedBy(cancelled, {cancelled, other}).empty());
  other.state = TaskState::kRunning;
  cancelled.parallel = true;  // --allow-parallel: runs beside it
  CHECK(ResumeBlockedBy(cancelled, {cancelled, other}).empty());
  cancelled.parallel = false;
  cancelled.state = TaskState::kStopped;  // still holds its DLQ: nothing else could take it
  CHECK(ResumeBlockedBy(cancelled, {cancelled, other}).empty());
}

TEST_CASE("task: one task holds a DLQ until it is done or cancelled", "[dlq][task]") {
  TaskRecord web = Sample(), api = Sample(), done = Sample();
  api.name = "api-1";
  api.queue = "api";
  done.name = "old";
  done.state = TaskState::kDone;
  CHECK(BlockingTasks({web, api, done}, "web") == std::vector<std::string>{web.name});
  CHECK(BlockingTasks({web, api, done}, "api") == std::vector<std::string>{"api-1"});
  web.state = TaskState::kStopped;  // resumable: still holds it
  CHECK(BlockingTasks({web}, "web").size() == 1);
  web.state = TaskState::kCancelled;
  CHECK(BlockingTasks({web}, "web").empty());
}
