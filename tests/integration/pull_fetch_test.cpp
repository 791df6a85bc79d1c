// PullConsumer against a real nats-server that goes away and comes back: a fetch made while the
// connection is down must leave nothing behind for the reconnect (common/nats_stream.h).
#include <nats/nats.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <string>

#include "common/nats_client.h"
#include "common/nats_stream.h"
#include "tests/support/nats_cluster.h"
#include "tests/support/test_stack.h"
#include "tests/support/wait.h"

using testsupport::TestStack;
using Clock = std::chrono::steady_clock;

namespace {

// The consumer's delivered-but-unacked count; -1 when the server does not answer.
int64_t AckPending(common::NatsClient& client, const char* stream, const char* durable) {
  jsConsumerInfo* ci = nullptr;
  if (js_GetConsumerInfo(&ci, client.js(), stream, durable, nullptr, nullptr) != NATS_OK) {
    return -1;
  }
  int64_t n = ci->NumAckPending;
  jsConsumerInfo_Destroy(ci);
  return n;
}

}  // namespace

TEST_CASE("a fetch while NATS is away fails at once and leaves no pull request for the reconnect",
          "[integration][nats]") {
  TestStack stack({"nats"});
  auto client = testsupport::ConnectNats(stack);
  REQUIRE(testsupport::AddRawStream(*client, {"PULL_T", "pull.t"}).ok());
  common::ConsumerSpec spec;
  spec.stream = "PULL_T";
  spec.durable = "puller";
  spec.filter_subject = "pull.t";
  auto consumer = common::PullConsumer::Bind(*client, spec);
  REQUIRE(consumer.ok());
  for (int i = 0; i < 5; ++i) {
    common::OutMessage m;
    m.subject = "pull.t";
    m.data = "m" + std::to_string(i);
    REQUIRE(common::PublishSync(*client, m).ok());
  }

  stack.Stop(stack.NatsNode(1));
  REQUIRE(testsupport::WaitFor([&] { return !client->Connected(); }, 10'000));
  // Both kinds of fetch, several times, as a fetch loop would while the server is away.
  for (int i = 0; i < 4; ++i) {
    auto started = Clock::now();
    auto batch = (*consumer)->Fetch(100, common::Millis(500));
    CHECK_FALSE(batch.ok());
    if (!batch.ok()) CHECK(batch.error().kind == common::ErrorKind::kRetryable);
    auto bounded = (*consumer)->Fetch(100, 1 << 20, common::Millis(500));
    CHECK_FALSE(bounded.ok());
    if (!bounded.ok()) CHECK(bounded.error().kind == common::ErrorKind::kRetryable);
    CHECK(Clock::now() - started < std::chrono::milliseconds(400));  // refused, not waited out
  }

  stack.Start(stack.NatsNode(1));
  REQUIRE(testsupport::WaitFor([&] { return client->Connected(); }, 20'000));
  // A pull request kept from the outage would be answered within moments of the reconnect with
  // all five messages, into a fetch that no longer waits: delivered, unacked, stuck for an ack
  // wait. Nothing is delivered at any poll through the next second.
  CHECK(testsupport::HoldsFor([&] { return AckPending(*client, "PULL_T", "puller") == 0; },
                              "nothing delivered unasked", 1000, 50) == "");

  // And the consumer works again: the five, once each.
  int got = 0;
  auto deadline = Clock::now() + std::chrono::seconds(20);
  while (got < 5 && Clock::now() < deadline) {
    auto batch = (*consumer)->Fetch(100, common::Millis(500));
    if (!batch.ok()) continue;  // the first fetches may race the resubscription
    for (auto& m : *batch) {
      REQUIRE(m.Ack().ok());
      ++got;
    }
  }
  CHECK(got == 5);
}
