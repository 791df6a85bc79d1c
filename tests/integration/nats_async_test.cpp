// AsyncPublisher against a real nats-server: every publish completes, even when the server never
// answers it (stopped, or crashed with the publish unread).
#include <nats/nats.h>
#include <signal.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
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
  const pid_t nats_pid = stack.nats(1).pid();
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

TEST_CASE("async publishes complete with the stream's own answer: stored, refused, no stream",
          "[integration][nats]") {
  TestStack stack({"nats"});
  auto client = testsupport::ConnectNats(stack);
  REQUIRE(testsupport::AddRawStream(*client, {"ASYNC_A", "async.a"}).ok());
  std::mutex mu;
  std::map<uint64_t, common::Status> answers;
  auto publisher =
      common::AsyncPublisher::Create(*client, [&](uint64_t tag, const common::Status& st) {
        std::lock_guard lock(mu);
        answers.emplace(tag, st);
      });
  REQUIRE(publisher.ok());
  common::OutMessage plain;
  plain.subject = "async.a";
  plain.data = "plain";
  common::OutMessage with_id = plain;  // headers: the message goes as a natsMsg
  with_id.msg_id = "m-1";
  with_id.headers.emplace_back("Content-Type", "text/plain");
  common::OutMessage wrong_stream = plain;  // the stream refuses it
  wrong_stream.expect_stream = "NOT_THIS_ONE";
  common::OutMessage nowhere = plain;  // no stream takes the subject
  nowhere.subject = "async.nowhere";
  REQUIRE((*publisher)->Publish(plain, 1).ok());
  REQUIRE((*publisher)->Publish(with_id, 2).ok());
  REQUIRE((*publisher)->Publish(with_id, 3).ok());  // a duplicate by its id: stored, once
  REQUIRE((*publisher)->Publish(wrong_stream, 4).ok());
  REQUIRE((*publisher)->Publish(nowhere, 5).ok());
  REQUIRE(testsupport::WaitFor(
      [&] {
        std::lock_guard lock(mu);
        return answers.size() == 5;
      },
      10'000));
  std::lock_guard lock(mu);
  CHECK(answers.at(1).ok());
  CHECK(answers.at(2).ok());
  CHECK(answers.at(3).ok());
  REQUIRE_FALSE(answers.at(4).ok());
  INFO(answers.at(4).error().message);
  CHECK(answers.at(4).error().code == 10060);  // "expected stream does not match"
  CHECK(answers.at(4).error().kind == common::ErrorKind::kPermanent);
  REQUIRE_FALSE(answers.at(5).ok());
  CHECK(answers.at(5).error().kind == common::ErrorKind::kRetryable);
  // The stream holds the plain message and one copy of the one with an id, with its header.
  jsStreamInfo* si = nullptr;
  REQUIRE(js_GetStreamInfo(&si, client->js(), "ASYNC_A", nullptr, nullptr) == NATS_OK);
  CHECK(si->State.Msgs == 2);
  jsStreamInfo_Destroy(si);
  natsMsg* second = nullptr;
  REQUIRE(js_GetMsg(&second, client->js(), "ASYNC_A", 2, nullptr, nullptr) == NATS_OK);
  const char* type = nullptr;
  CHECK(natsMsgHeader_Get(second, "Content-Type", &type) == NATS_OK);
  CHECK(std::string(type ? type : "") == "text/plain");
  natsMsg_Destroy(second);
}
