// The crash-loop guard (common/crash_guard.h) in the metricswriter, against a real nats-server.
// The earlier readers are played by the test: it takes the first deliveries of the batches from
// the durable consumer (created here, with a 3 s ack wait) and leaves a marker for one of them,
// as a metricswriter that died decoding its last delivery would have.
// - A batch two readers stopped on (the marker counts one stop before the last) is dead-lettered
//   with the guard's reason at delivery 4 instead of being decoded again; a redelivered batch
//   without a marker is decoded under one and stored, and its marker removed.
// - A batch one reader stopped on is decoded again under a marker counting it, and stored.
#include <catch2/catch.hpp>

#include <chrono>

#include "common/config.h"
#include "common/crash_guard.h"
#include "common/nats_kv.h"
#include "common/nats_stream.h"
#include "metricswriter/config.h"
#include "tests/metricswriter/harness.h"
#include "tests/support/nats_cluster.h"

namespace {
// The writer's own consumer, as it would create it (nats.c binds only an identical one).
common::ConsumerSpec WriterSpec() {
  common::ConfigReader env(std::map<std::string, std::string>{{"METRICSWRITER_ACK_WAIT", "3s"}});
  return mw::ReadWriterOptions(env).consumer;
}
}  // namespace

TEST_CASE("a batch two readers died on is dead-lettered by the next one", "[integration]") {
  mwtest::Harness h;
  h.Publish("acme", mwtest::JsonBatch(2, mwtest::NowNs()), "died-on");
  h.Publish("acme", mwtest::JsonBatch(3, mwtest::NowNs()), "redelivered");
  const uint64_t died_on_seq =
      testsupport::DieReading(h.nats(), WriterSpec(), 2, 3, "died-on", "writer-b", 1);
  REQUIRE(died_on_seq != 0);
  auto bucket = common::KvBucket::Bind(h.nats(), "crash_guard");
  REQUIRE(bucket.ok());

  auto w = h.StartWriter(0, {{"METRICSWRITER_ACK_WAIT", "3s"}});
  CHECK(h.WaitCount(mwtest::kBatches, 1, 20'000) == 1);
  CHECK(h.Count(mwtest::kPoints) == 3);
  REQUIRE(testsupport::WaitFor([&] { return h.StreamMessages("API_DLQ") == 1; }, 20'000));
  auto dlq = h.ReadDlq();
  REQUIRE(dlq.size() == 1);
  CHECK(dlq[0].msg_id == "died-on");
  CHECK(dlq[0].reason == common::crash_guard::kReason);
  CHECK(dlq[0].detail ==
        "delivery 4; instance writer-b began reading delivery 3 at unix ms 1765000000000 and "
        "never finished; 1 reader stopped on it before");
  std::string judged;
  if (!h.WaitDrained("API_METRICS", 10'000, &judged)) FAIL_CHECK("not drained: " << judged);
  CHECK(h.Metric(0, "metricswriter_dead_lettered_total", "reason=\"crash_loop\"") == 1);
  // The stored batch's marker is gone; the dead letter's stays until the bucket's TTL.
  for (uint64_t seq = 1; seq <= 2; ++seq) {
    auto v = (*bucket)->Get(common::crash_guard::Key("metricswriter", seq));
    REQUIRE(v.ok());
    CHECK(v->has_value() == (seq == died_on_seq));
  }
}

TEST_CASE("a batch one reader died on is decoded again and stored", "[integration]") {
  mwtest::Harness h;
  h.Publish("acme", mwtest::JsonBatch(2, mwtest::NowNs()), "died-once");
  const uint64_t seq =
      testsupport::DieReading(h.nats(), WriterSpec(), 1, 2, "died-once", "writer-b");
  REQUIRE(seq != 0);
  auto bucket = common::KvBucket::Bind(h.nats(), "crash_guard");
  REQUIRE(bucket.ok());

  auto w = h.StartWriter(0, {{"METRICSWRITER_ACK_WAIT", "3s"}});
  CHECK(h.WaitCount(mwtest::kBatches, 1, 20'000) == 1);
  CHECK(h.Count(mwtest::kPoints) == 2);
  std::string judged;
  if (!h.WaitDrained("API_METRICS", 10'000, &judged)) FAIL_CHECK("not drained: " << judged);
  CHECK(h.StreamMessages("API_DLQ") == 0);
  auto v = (*bucket)->Get(common::crash_guard::Key("metricswriter", seq));
  REQUIRE(v.ok());
  CHECK_FALSE(v->has_value());
}
