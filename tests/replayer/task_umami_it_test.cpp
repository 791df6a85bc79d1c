// A redrive task end to end (issue 24): dead letters of good events go back to WEB_EVENTS as a
// task, its runner is killed with -9 mid-way, `dlq task resume` finishes it, and the replayer
// stores every event in a real Umami exactly once.
#include <signal.h>

#include <catch2/catch.hpp>

#include "common/timefmt.h"
#include "tests/platformctl/dlq_fixture.h"
#include "tests/replayer/fixture.h"

using replayer_test::Fixture;

namespace {

nlohmann::json Task(Fixture& f, const std::string& name) {
  auto r = dlqtest::Ctl(f.stack, "dlq task list --json");
  REQUIRE(r.rc == 0);
  return dlqtest::TaskOf(r.out, name);
}

}  // namespace

TEST_CASE("a redrive task killed with -9 and resumed stores every dead letter in Umami once",
          "[integration][umami][replayer][task]") {
  Fixture f(1, 1);
  constexpr int kN = 300;
  const int64_t now_ms = common::NowUnixNs() / 1'000'000;
  std::vector<common::OutMessage> msgs;
  for (int i = 1; i <= kN; ++i) {
    testsupport::TestEvent e;
    e.site = f.sites[0];
    e.visitor = i % 30;
    e.seq = i;
    e.id = "task-" + std::to_string(i);
    e.url = "/task/" + std::to_string(i);
    dlqtest::Seed s;
    s.key = f.sites[0];
    s.reason = "umami failed this event 4 times while its health checks passed";
    s.origin_seq = static_cast<uint64_t>(i);
    s.msg_id = e.id;
    s.raw_payload = testsupport::EventJson(e, now_ms + i);
    msgs.push_back(dlqtest::DeadLetter(s));
  }
  dlqtest::PublishAll(*f.client, msgs);
  f.StartReplayer();

  testsupport::ChildProcess runner(
      {testsupport::BinaryDir() + "/platformctl/platformctl", "dlq", "replay", "--queue", "web",
       "--all", "--max-rate", "20/s", "--task", "umami-redrive"},
      {{"NATS_URL", f.stack.Env("NATS_URL")}}, f.stack.dir() + "/task-runner.log");
  REQUIRE(testsupport::WaitFor(
      [&] { return Task(f, "umami-redrive")["replayed"].get<uint64_t>() >= 60; }, 30'000));
  runner.Signal(SIGKILL);
  runner.Wait(5000);
  REQUIRE(testsupport::WaitFor([&] { return Task(f, "umami-redrive")["runner_gone"] == true; },
                               45'000));
  auto resumed = dlqtest::Ctl(f.stack, "dlq task resume umami-redrive");
  INFO(resumed.out << resumed.err);
  CHECK(resumed.rc == 0);
  auto t = Task(f, "umami-redrive");
  CHECK(t["state"] == "done");
  CHECK(t["replayed"].get<uint64_t>() + t["already"].get<uint64_t>() == kN);

  REQUIRE(f.WaitDrained(120'000));
  CHECK(f.StoredEvents("url_path LIKE '/task/%'") == kN);
  CHECK(testsupport::QueryInt(f.UmamiDb(),
                              "SELECT count(DISTINCT url_path) FROM website_event "
                              "WHERE url_path LIKE '/task/%'") == kN);
  CHECK(f.DlqReasons().empty());
}
