// A redrive task on a three-node cluster (issue 24): the node leading WEB_DLQ is killed while
// the task runs, then the runner itself is killed with -9; `dlq task resume` finishes it from its
// recorded progress. Every dead letter ends on WEB_EVENTS once (each under its own replay id),
// nothing is left in WEB_DLQ, and the task's counts add up. (WEB_EVENTS is what the replayer
// drains into Umami; one copy there is one send, and its duplicate guard covers a copy past the
// stream's duplicate window.)
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <set>

#include "tests/cluster/ctl_cluster.h"

using ctlcluster::Cluster;

namespace {

nlohmann::json Task(Cluster& c, const std::string& name) {
  auto r = c.Ctl("dlq task list --json");
  INFO(r.Show());
  REQUIRE(r.rc == 0);
  return dlqtest::TaskOf(r.out, name);
}

}  // namespace

TEST_CASE(
    "a redrive task survives the DLQ leader's death and its runner's kill -9: resumed, "
    "every message once on WEB_EVENTS",
    "[cluster][dlq][task]") {
  constexpr uint64_t kN = 3000;
  Cluster c;
  auto client = c.Connect();
  dlqtest::SeedWeb(*client, static_cast<int>(kN), "ct");

  testsupport::ChildProcess runner(
      {testsupport::BinaryDir() + "/platformctl/platformctl", "dlq", "replay", "--queue", "web",
       "--all", "--rate", "40/s", "--task", "cluster-redrive"},
      {{"NATS_URL", c.stack.Env("NATS_URL")}}, c.stack.dir() + "/runner.log");
  REQUIRE(testsupport::WaitFor(
      [&] { return Task(c, "cluster-redrive")["replayed"].get<uint64_t>() >= 80; }, 30'000));

  // The DLQ's leader dies mid-task: the runner waits out the election and goes on.
  const int victim = c.LeaderOf(*client, "WEB_DLQ");
  REQUIRE(victim > 0);
  c.stack.Kill(c.stack.NatsNode(victim));
  auto survivor = c.Connect(victim);
  const uint64_t at_kill = Task(c, "cluster-redrive")["replayed"].get<uint64_t>();
  REQUIRE(testsupport::WaitFor(
      [&] { return Task(c, "cluster-redrive")["replayed"].get<uint64_t>() >= at_kill + 80; },
      60'000));

  // Then the runner itself, with -9 (at 40/s the task is far from done: its 3,000 take 75 s).
  REQUIRE(Task(c, "cluster-redrive")["replayed"].get<uint64_t>() < kN - 300);
  runner.Signal(SIGKILL);
  runner.Wait(5000);
  c.stack.Start(c.stack.NatsNode(victim));
  auto t = Task(c, "cluster-redrive");
  CHECK(t["state"] == "running");
  REQUIRE(t["next_seq"].get<uint64_t>() > 1);
  CHECK(c.Ctl("dlq task resume cluster-redrive").rc == 2);  // not yet counted gone
  REQUIRE(testsupport::WaitFor([&] { return Task(c, "cluster-redrive")["runner_gone"] == true; },
                               45'000));
  auto resumed = c.Ctl("dlq task resume cluster-redrive");
  INFO(resumed.Show());
  CHECK(resumed.rc == 0);
  t = Task(c, "cluster-redrive");
  CHECK(t["state"] == "done");
  CHECK(t["replayed"].get<uint64_t>() + t["already"].get<uint64_t>() == kN);
  CHECK(t["failed"] == 0);
  CHECK(t["skipped"] == 0);

  auto again = c.Connect();
  CHECK(dlqtest::Count(*again, "WEB_DLQ") == 0);
  auto events = dlqtest::ReadAll(*again, "WEB_EVENTS");
  CHECK(events.size() == kN);
  std::set<std::string> ids;
  for (const auto& e : events) ids.insert(e.msg_id);
  CHECK(ids.size() == kN);
  CHECK(dlqtest::AllOutput().find(dlqtest::kMarker) == std::string::npos);
}
