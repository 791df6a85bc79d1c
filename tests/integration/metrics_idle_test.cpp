// The /metrics and /healthz endpoint stays answerable while 2,000 idle connections are open to
// it (issue 35: "/healthz times out with 1,500 idle connections open").
#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <string>
#include <thread>

#include "tests/support/idle_clients.h"
#include "tests/support/test_stack.h"
#include "tests/support/wait.h"

namespace {

using Clock = std::chrono::steady_clock;

using testsupport::MsSince;

}  // namespace

TEST_CASE("/healthz and /metrics answer within 1 s with 2000 idle connections open",
          "[integration][metrics]") {
  testsupport::TestStack stack({"nats"});
  int port = testsupport::FreePortRange(1);
  testsupport::ChildProcess replayer({testsupport::BinaryDir() + "/replayer/replayer"},
                                     {{"NATS_URL", stack.Env("NATS_URL")},
                                      {"METRICS_LISTEN", "127.0.0.1:" + std::to_string(port)}},
                                     stack.dir() + "/replayer.log");
  REQUIRE(testsupport::WaitFor([&] { return testsupport::HttpGet(port, "/healthz", 1000) == 200; },
                               15'000));

  constexpr int kIdle = 2000;
  testsupport::IdleClients idle(port, kIdle);
  // Until the server's 3 s for a request head has passed and it cut idle connections (or 30 s):
  // the ones it cuts are opened again at once, so 2,000 are open (or pending in the kernel) all
  // the time.
  int64_t worst = 0;
  int asked = 0;
  int answered = 0;
  auto until = Clock::now() + std::chrono::seconds(30);
  while (idle.opened() <= kIdle && Clock::now() < until) {
    idle.Refresh();
    for (const char* path : {"/healthz", "/metrics"}) {
      auto t0 = Clock::now();
      std::string answer;
      int status = testsupport::HttpGet(port, path, 1000, &answer);
      worst = std::max(worst, MsSince(t0));
      ++asked;
      if (status == 200) ++answered;
      if (std::string(path) == "/metrics" && status == 200) {
        CHECK(answer.find("replayer_nats_connected 1") != std::string::npos);
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the pace of the asking
  }
  std::printf(
      "[metrics] %d idle connections open: %d of %d GETs answered 200, slowest %lld ms; idle "
      "connections opened %lld times\n",
      kIdle, answered, asked, static_cast<long long>(worst), static_cast<long long>(idle.opened()));
  CHECK(answered == asked);
  CHECK(worst < 1000);
  // The server cut idle connections after its request timeout (they were opened again).
  CHECK(idle.opened() > kIdle);
  auto t_stop = Clock::now();
  replayer.Signal(SIGTERM);
  CHECK(replayer.Wait(20'000) == 0);
  // The idle connections do not hold up the shutdown.
  CHECK(MsSince(t_stop) < 5000);
}
