// A running service's /metrics parses with Prometheus' own linter, and /healthz answers.
#include <catch2/catch.hpp>
#include <csignal>

#include "tests/support/test_stack.h"

using testsupport::Capture;

TEST_CASE("replayer /metrics passes promtool check metrics and /healthz answers",
          "[integration][metrics]") {
  testsupport::TestStack stack({"nats"});
  int rc = -1;
  Capture("NATS_URL=" + stack.Env("NATS_URL") + " " + testsupport::BinaryDir() +
              "/platformctl/platformctl init",
          &rc);
  REQUIRE(rc == 0);
  int port = testsupport::FreePortRange(2);
  // An Umami nobody listens on: the process health metrics get their "down" samples too.
  testsupport::ChildProcess replayer(
      {testsupport::BinaryDir() + "/replayer/replayer"},
      {{"NATS_URL", stack.Env("NATS_URL")},
       {"UMAMI_URLS", "http://127.0.0.1:" + std::to_string(port + 1)},
       {"METRICS_LISTEN", "127.0.0.1:" + std::to_string(port)}},
      stack.dir() + "/replayer.log");
  std::string url = "http://127.0.0.1:" + std::to_string(port);
  REQUIRE(testsupport::WaitFor(
      [&] {
        return Capture("curl -s " + url + "/metrics").find("replayer_umami_process_up") !=
               std::string::npos;
      },
      10'000));
  std::string metrics = Capture("curl -s " + url + "/metrics");
  CHECK_THAT(metrics, Catch::Contains("# TYPE replayer_events_stored_total counter"));
  CHECK_THAT(metrics, Catch::Contains("# TYPE replayer_send_duration_seconds histogram"));
  std::string lint = Capture("curl -s " + url + "/metrics | promtool check metrics 2>&1", &rc);
  INFO(lint);
  CHECK(rc == 0);
  std::string health = Capture("curl -s -w ' %{http_code}' " + url + "/healthz");
  CHECK_THAT(health, Catch::Contains("nats: connected"));
  CHECK_THAT(health, Catch::EndsWith(" 200"));
  replayer.Signal(SIGTERM);
  CHECK(replayer.Wait(20'000) == 0);
}
