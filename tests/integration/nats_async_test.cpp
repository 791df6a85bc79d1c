// AsyncPublisher against a real nats-server: every publish completes, even when the server never
// answers it (stopped, or crashed with the publish unread).
#include <signal.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <thread>

#include "common/nats_async.h"
#include "common/nats_client.h"
#include "tests/support/nats_cluster.h"
#include "tests/support/test_stack.h"

using testsupport::TestStack;

TEST_CASE("async publishes the server never answers complete with an error and free their place",
          "[integration][nats]") {
  TestStack stack({"nats"});
  auto client = testsupport::ConnectNats(stack);
  REQUIRE(testsupport::AddRawStream(*client, {"ASYNC_T", "async.t"}).ok());
  common::NatsClient::Options o;
  o.client_name = "async test";
  o.request_timeout_ms = 1000;
  auto pub_client = client->Sibling(o);
  REQUIRE(pub_client.ok());
  std::atomic<int> ok{0}, failed{0};
  constexpr int kMaxPending = 8;
  auto publisher = common::AsyncPublisher::Create(
      **pub_client,
      [&](uint64_t, const common::Status& st) {
        if (st)
          ++ok;
        else
          ++failed;
      },
      kMaxPending);
  REQUIRE(publisher.ok());
  common::OutMessage m;
  m.subject = "async.t";
  m.data = "x";
  REQUIRE((*publisher)->Publish(m, 1).ok());
  REQUIRE(testsupport::WaitFor([&] { return ok.load() == 1; }, 5'000));

  // A stopped server reads nothing and answers nothing: every place among max_pending fills.
  pid_t nats_pid = 0;
  std::ifstream(stack.dir() + "/nats.pid") >> nats_pid;
  REQUIRE(nats_pid > 0);
  REQUIRE(kill(nats_pid, SIGSTOP) == 0);
  for (int i = 0; i < kMaxPending; ++i) REQUIRE((*publisher)->Publish(m, 10 + i).ok());
  bool all_failed = testsupport::WaitFor([&] { return failed.load() == kMaxPending; }, 20'000);
  REQUIRE(kill(nats_pid, SIGCONT) == 0);
  CHECK(all_failed);  // after the request timeout (1 s), each with a timeout error
  CHECK(ok.load() == 1);

  // Their places are free again: more publishes than max_pending go through. (The server answers
  // the stopped-time publishes late too; nothing is left waiting for those answers.)
  for (int i = 0; i < 3 * kMaxPending; ++i) {
    REQUIRE(testsupport::WaitFor([&] { return (*publisher)->Publish(m, 100 + i).ok(); }, 5'000));
  }
  CHECK(testsupport::WaitFor([&] { return ok.load() == 1 + 3 * kMaxPending; }, 30'000));
  CHECK(failed.load() == kMaxPending);
}
