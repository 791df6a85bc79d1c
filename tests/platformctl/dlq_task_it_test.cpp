// Redrive tasks against a real nats-server: `dlq replay --task` records its progress in KV
// dlq_tasks; `dlq task list|cancel|resume` from other processes; a runner killed with -9 is
// resumed where it stopped, nothing published twice, the counts right; --to-subject;
// `streams --watch`.
#include <nats/nats.h>
#include <signal.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "common/dead_letter.h"
#include "platformctl/dlq/replay.h"
#include "tests/platformctl/dlq_fixture.h"

using testsupport::TestStack;

namespace {

testsupport::ChildProcess StartCtl(const TestStack& stack, const std::string& args,
                                   const std::string& log) {
  std::vector<std::string> argv{testsupport::BinaryDir() + "/platformctl/platformctl"};
  size_t at = 0;
  while (at < args.size()) {
    size_t sp = args.find(' ', at);
    if (sp == std::string::npos) sp = args.size();
    if (sp > at) argv.push_back(args.substr(at, sp - at));
    at = sp + 1;
  }
  return testsupport::ChildProcess(argv, {{"NATS_URL", stack.Env("NATS_URL")}}, log);
}

nlohmann::json Task(const TestStack& stack, const std::string& name) {
  auto r = dlqtest::Ctl(stack, "dlq task list --json");
  REQUIRE(r.rc == 0);
  return dlqtest::TaskOf(r.out, name);
}

}  // namespace

TEST_CASE(
    "a redrive task is listed while it runs, cancelled from another process, and keeps "
    "the rest in the DLQ",
    "[integration][dlq][task]") {
  TestStack stack({"nats"});
  dlqtest::Init(stack);
  auto client = testsupport::ConnectNats(stack);
  dlqtest::SeedWeb(*client, 600, "c");

  auto runner = StartCtl(stack, "dlq replay --queue web --all --rate 60/s --task drain-1",
                         stack.dir() + "/r1.log");
  REQUIRE(testsupport::WaitFor(
      [&] {
        auto t = Task(stack, "drain-1");
        return t["state"] == "running" && t["replayed"].get<uint64_t>() > 0;
      },
      15'000));
  auto t = Task(stack, "drain-1");
  CHECK(t["runner_gone"] == false);
  CHECK(t["end_seq"] == 600);
  CHECK(t["queue"] == "web");

  // One task per DLQ: a second one is refused while this one holds WEB_DLQ.
  auto second = dlqtest::Ctl(stack, "dlq replay --queue web --all --task drain-2");
  CHECK(second.rc == 2);
  CHECK(second.err.find("drain-1 still holds WEB_DLQ") != std::string::npos);
  // The same name again is refused too, and a resume while its runner lives.
  CHECK(dlqtest::Ctl(stack, "dlq replay --queue web --all --task drain-1 --allow-parallel").rc ==
        2);
  auto early = dlqtest::Ctl(stack, "dlq task resume drain-1");
  CHECK(early.rc == 2);
  CHECK(early.err.find("is alive") != std::string::npos);

  auto cancel = dlqtest::Ctl(stack, "dlq task cancel drain-1");
  INFO(cancel.out << cancel.err);
  CHECK(cancel.rc == 0);
  CHECK(cancel.out.find("cancelled at seq") != std::string::npos);
  CHECK(runner.Wait(15'000) == 1);
  t = Task(stack, "drain-1");
  CHECK(t["state"] == "cancelled");
  const uint64_t replayed = t["replayed"].get<uint64_t>();
  CHECK(replayed > 0);
  CHECK(replayed < 600);
  // The counts are what happened: each replayed message is on WEB_EVENTS once, the rest kept.
  CHECK(dlqtest::Count(*client, "WEB_EVENTS") == replayed);
  CHECK(dlqtest::Count(*client, "WEB_DLQ") == 600 - replayed);
  // The runner said why it stopped and how to go on (issue 36: "stopped early: ;").
  const std::string said = testsupport::Capture("cat " + stack.dir() + "/r1.log");
  INFO(said);
  CHECK(said.find("stopped early: cancelled (cancelled by ") != std::string::npos);
  CHECK(said.find("stopped early: ;") == std::string::npos);
  CHECK(said.find("resume it with: platformctl dlq task resume drain-1") != std::string::npos);
  // Once it is cancelled, another task may take WEB_DLQ, and the cancelled one cannot resume
  // beside it; the refusal says how to go on.
  auto other = StartCtl(stack, "dlq replay --queue web --all --rate 1/s --task drain-3",
                        stack.dir() + "/r3.log");
  REQUIRE(
      testsupport::WaitFor([&] { return Task(stack, "drain-3")["state"] == "running"; }, 15'000));
  auto blocked = dlqtest::Ctl(stack, "dlq task resume drain-1");
  CHECK(blocked.rc == 2);
  CHECK(blocked.err.find("task drain-3 holds its DLQ") != std::string::npos);
  CHECK(blocked.err.find("platformctl dlq task resume drain-1") != std::string::npos);
  CHECK(dlqtest::Ctl(stack, "dlq task cancel drain-3").rc == 0);
  CHECK(other.Wait(15'000) == 1);
  // Resumed where it was cancelled: the rest of its selection, nothing twice.
  auto resumed = dlqtest::Ctl(stack, "dlq task resume drain-1");
  INFO(resumed.out << resumed.err);
  CHECK(resumed.rc == 0);
  CHECK(Task(stack, "drain-1")["state"] == "done");
  CHECK(dlqtest::Count(*client, "WEB_EVENTS") == 600);
  CHECK(dlqtest::Count(*client, "WEB_DLQ") == 0);
  CHECK(dlqtest::AllOutput().find(dlqtest::kMarker) == std::string::npos);
}

TEST_CASE(
    "a redrive task whose runner is killed with -9 is resumed where it stopped: nothing "
    "published twice, the counts right",
    "[integration][dlq][task]") {
  TestStack stack({"nats"});
  dlqtest::Init(stack);
  auto client = testsupport::ConnectNats(stack);
  constexpr uint64_t kN = 2000;
  dlqtest::SeedWeb(*client, static_cast<int>(kN), "k");

  auto runner = StartCtl(stack, "dlq replay --queue web --all --rate 100/s --task kill-me",
                         stack.dir() + "/r2.log");
  REQUIRE(testsupport::WaitFor(
      [&] { return Task(stack, "kill-me")["replayed"].get<uint64_t>() >= 200; }, 20'000));
  runner.Signal(SIGKILL);
  runner.Wait(5000);
  auto t = Task(stack, "kill-me");
  CHECK(t["state"] == "running");  // its runner cannot say otherwise
  const uint64_t next = t["next_seq"].get<uint64_t>();
  REQUIRE(next > 1);

  // A runner that died between a batch's publish and its erase: the next DLQ message published
  // already, under the id a replay gives it. The resumed run publishes it again and the stream
  // drops the copy: "already there".
  // (The first message still held, by a message get: no consumer races the dead runner's.)
  jsStreamInfo* si = nullptr;
  REQUIRE(js_GetStreamInfo(&si, client->js(), "WEB_DLQ", nullptr, nullptr) == NATS_OK);
  const uint64_t first_seq = si->State.FirstSeq;
  const uint64_t held = si->State.Msgs;
  jsStreamInfo_Destroy(si);
  REQUIRE(held > 0);
  REQUIRE(first_seq >= next);
  natsMsg* first = nullptr;
  REQUIRE(js_GetMsg(&first, client->js(), "WEB_DLQ", first_seq, nullptr, nullptr) == NATS_OK);
  common::OutMessage copy;  // seed i is DLQ seq i, its original id k-<i>
  copy.subject = "web.events.site-" + std::to_string(first_seq % 4);
  copy.data.assign(natsMsg_GetData(first), static_cast<size_t>(natsMsg_GetDataLength(first)));
  natsMsg_Destroy(first);
  copy.msg_id =
      platformctl::dlq::ReplayMsgId("k-" + std::to_string(first_seq), "WEB_DLQ", first_seq);
  REQUIRE(common::PublishSync(*client, copy));

  // Its runner counts as gone only after 30 s without a heartbeat.
  auto early = dlqtest::Ctl(stack, "dlq task resume kill-me");
  CHECK(early.rc == 2);
  REQUIRE(
      testsupport::WaitFor([&] { return Task(stack, "kill-me")["runner_gone"] == true; }, 40'000));
  auto listed = dlqtest::Ctl(stack, "dlq task list");
  CHECK(listed.out.find("runner gone") != std::string::npos);

  auto resumed = dlqtest::Ctl(stack, "dlq task resume kill-me");
  INFO(resumed.out << resumed.err);
  CHECK(resumed.rc == 0);
  CHECK(resumed.out.find("from seq " + std::to_string(next)) != std::string::npos);
  t = Task(stack, "kill-me");
  CHECK(t["state"] == "done");
  CHECK(t["replayed"].get<uint64_t>() + t["already"].get<uint64_t>() == kN);
  // The resumed run met the copy above (or the dead runner's own publish of the same message):
  // the stream dropped it. The task counts it once: as already there, or, when the dead runner
  // had counted its batch before dying, as replayed then.
  CHECK(resumed.out.find("already there from an earlier run: 0") == std::string::npos);
  CHECK(dlqtest::Count(*client, "WEB_DLQ") == 0);
  // Every message once on WEB_EVENTS, each under its own replay id.
  auto events = dlqtest::ReadAll(*client, "WEB_EVENTS");
  CHECK(events.size() == kN);
  std::set<std::string> ids;
  for (const auto& e : events) ids.insert(e.msg_id);
  CHECK(ids.size() == kN);
}

TEST_CASE("a redrive with --to-subject goes to another subject of the origin stream only",
          "[integration][dlq][task]") {
  TestStack stack({"nats"});
  dlqtest::Init(stack);
  auto client = testsupport::ConnectNats(stack);
  dlqtest::SeedWeb(*client, 20, "q");
  auto bad = dlqtest::Ctl(stack, "dlq replay --queue web --all --to-subject web.other.x");
  CHECK(bad.rc == 2);
  CHECK(bad.err.find("not a subject of WEB_EVENTS") != std::string::npos);
  CHECK(dlqtest::Count(*client, "WEB_DLQ") == 20);
  auto ok = dlqtest::Ctl(stack,
                         "dlq replay --queue web --all --to-subject web.events.quarantine "
                         "--task quarantine");
  INFO(ok.out << ok.err);
  CHECK(ok.rc == 0);
  auto events = dlqtest::ReadAll(*client, "WEB_EVENTS");
  REQUIRE(events.size() == 20);
  for (const auto& e : events) CHECK(e.subject == "web.events.quarantine");
  CHECK(Task(stack, "quarantine")["to_subject"] == "web.events.quarantine");
}

namespace {
// The readings `streams --watch` printed so far into `log` (one table header each).
size_t Readings(const std::string& log) {
  std::string out = testsupport::ReadFile(log);
  size_t n = 0;
  for (size_t at = out.find("STREAM "); at != std::string::npos; at = out.find("STREAM ", at + 1))
    ++n;
  return n;
}
}  // namespace

TEST_CASE("streams --watch prints a reading every interval with the rates since the last",
          "[integration][dlq]") {
  TestStack stack({"nats"});
  dlqtest::Init(stack);
  auto client = testsupport::ConnectNats(stack);
  const std::string log = stack.dir() + "/watch.log";
  auto watch = StartCtl(stack, "streams --watch 0.5 --stream WEB_DLQ", log);
  auto readings = [&] { return Readings(log); };
  // Waits on what the command printed, not on fixed times: a build under ASan on a busy machine
  // can take a second to print its first reading.
  bool first = testsupport::WaitFor([&] { return readings() >= 1; }, 10'000);
  INFO(testsupport::ReadFile(log));
  REQUIRE(first);
  dlqtest::SeedWeb(*client, 50, "w");
  bool more = testsupport::WaitFor(
      [&] {
        return readings() >= 3 &&
               testsupport::ReadFile(log).find("rates over 0.5s") != std::string::npos;
      },
      10'000);
  watch.Signal(SIGTERM);
  CHECK(watch.Wait(5000) == 0);
  std::string out = testsupport::ReadFile(log);
  INFO(out);
  CHECK(more);
  CHECK(out.find("one reading, no rates") != std::string::npos);  // the first
  CHECK(dlqtest::Ctl(stack, "streams --watch 0").rc == 2);
}

// Issue 36: its help says "(default 5)", but `--watch` without a number exited 2.
TEST_CASE("streams --watch alone reads every 5 s", "[integration][dlq]") {
  TestStack stack({"nats"});
  dlqtest::Init(stack);
  const std::string log = stack.dir() + "/watch-default.log";
  const auto started = std::chrono::steady_clock::now();
  auto watch = StartCtl(stack, "streams --watch --stream WEB_DLQ", log);
  auto readings = [&] { return Readings(log); };
  bool two = testsupport::WaitFor([&] { return readings() >= 2; }, 20'000);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  watch.Signal(SIGTERM);
  CHECK(watch.Wait(5000) == 0);
  std::string out = testsupport::ReadFile(log);
  INFO(out);
  REQUIRE(two);
  CHECK(took >= 4.5);  // the second reading waited the default interval
  CHECK(out.find("rates over ") != std::string::npos);  // the second, since the first
}
