// AsyncPublisher against a real nats-server: every publish completes, even when the server never
// answers it (stopped, or crashed with the publish unread).
#include <signal.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "common/nats_async.h"
#include "common/nats_client.h"
#include "tests/support/nats_cluster.h"
#include "tests/support/test_stack.h"

using testsupport::TestStack;

namespace {

// The state letter of every thread of the process from /proc (T: stopped): 'T' once all have
// stopped, '?' when unreadable, else the first other letter.
char ProcessState(pid_t pid) {
  char state = '?';
  std::error_code ec;
  for (const auto& t :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    std::ifstream f(t.path() / "stat");
    std::string line;
    std::getline(f, line);
    auto close = line.rfind(')');  // the command name may hold spaces
    if (close == std::string::npos || close + 2 >= line.size()) return '?';
    if (line[close + 2] != 'T') return line[close + 2];
    state = 'T';
  }
  return state;
}

}  // namespace

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
  // kill() returns before every thread of the server has stopped: publish only once the
  // kernel says it is stopped, or the server may still answer them (a failure seen twice
  // while other tests ran beside this one: 8 answers, no timeout).
  REQUIRE(testsupport::WaitFor([&] { return ProcessState(nats_pid) == 'T'; }, 5'000));
  for (int i = 0; i < kMaxPending; ++i) REQUIRE((*publisher)->Publish(m, 10 + i).ok());
  bool all_failed = testsupport::WaitFor([&] { return failed.load() == kMaxPending; }, 20'000);
  int ok_while_stopped = ok.load() - 1;
  int failed_while_stopped = failed.load();
  char state_at_end = ProcessState(nats_pid);
  REQUIRE(kill(nats_pid, SIGCONT) == 0);
  INFO("while the server was stopped: " << ok_while_stopped << " answered, " << failed_while_stopped
                                        << " failed; its state at the end '" << state_at_end
                                        << "'");
  CHECK(all_failed);  // after the request timeout (1 s), each with a timeout error
  CHECK(ok_while_stopped == 0);

  // Their places are free again: more publishes than max_pending go through. (The server answers
  // the stopped-time publishes late too; nothing is left waiting for those answers.)
  for (int i = 0; i < 3 * kMaxPending; ++i) {
    REQUIRE(testsupport::WaitFor([&] { return (*publisher)->Publish(m, 100 + i).ok(); }, 5'000));
  }
  CHECK(testsupport::WaitFor([&] { return ok.load() == 1 + 3 * kMaxPending; }, 30'000));
  CHECK(failed.load() == kMaxPending);
}
