// A dead letter that cannot be published is counted by cause
// (metricswriter_dlq_publish_failures_total{cause}), logged once, and the batch stays in
// API_METRICS, tried again at a slow pace, until it can be moved. Against a real nats-server:
// its max payload (8 MB in the test stack), API_DLQ's max message size, API_DLQ deleted.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "tests/metricswriter/harness.h"
#include "tests/support/wait.h"

namespace {

size_t Occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// A body that cannot be decoded (it is not JSON), of `size` bytes.
std::string Undecodable(size_t size) { return "{" + std::string(size - 1, 'x'); }

constexpr const char* kFailures = "metricswriter_dlq_publish_failures_total";

}  // namespace

TEST_CASE("a dead letter above the server's max payload is counted, logged once and kept",
          "[integration]") {
  mwtest::Harness h;
  // `platformctl init` gives API_METRICS a max_msg_size that leaves room for the dead-letter
  // headers, so the edge's publish of such a batch is refused at the door. A stream provisioned
  // before that limit (or changed by hand) has none: that is the case the writer must survive.
  h.SetMaxMsgSize("API_METRICS", -1);
  // Fits the server's 8 MiB max payload as it is; with the dead-letter headers it does not.
  h.Publish("acme", Undecodable((8u << 20) - 100), "too-big");
  auto w = h.StartWriter(0, {{"METRICSWRITER_DLQ_RETRY", "2s"}});
  CHECK(testsupport::WaitFor([&] { return h.Metric(0, kFailures, "cause=\"too_large\"") >= 3; },
                             30'000));
  CHECK(h.Metric(0, kFailures, "cause=\"unavailable\"") == 0);
  CHECK(h.Metric(0, "metricswriter_dead_lettered_total") == 0);
  // Kept, not dropped: still in API_METRICS, nothing in API_DLQ.
  CHECK(h.StreamMessages("API_METRICS") == 1);
  CHECK(h.StreamMessages("API_DLQ") == 0);
  const std::string log = testsupport::ReadFile(h.log_path(0));
  INFO(log.substr(0, 2000));
  CHECK(Occurrences(log, "the server refuses it for its size") == 1);
  CHECK(Occurrences(log, "Maximum Payload") == 1);
  // The writer is not wedged by it: other batches are stored meanwhile.
  h.Publish("acme", mwtest::JsonBatch(3, mwtest::NowNs()), "good");
  CHECK(h.WaitCount(mwtest::kBatches, 1, 20'000) == 1);
}

TEST_CASE("a dead letter above API_DLQ's max message size waits until the limit is raised",
          "[integration]") {
  mwtest::Harness h;
  h.SetMaxMsgSize("API_DLQ", 2000);
  h.Publish("acme", Undecodable(3000), "over-dlq-limit");
  auto w = h.StartWriter(0, {{"METRICSWRITER_DLQ_RETRY", "2s"}});
  CHECK(testsupport::WaitFor([&] { return h.Metric(0, kFailures, "cause=\"too_large\"") >= 2; },
                             30'000));
  CHECK(h.StreamMessages("API_METRICS") == 1);
  CHECK(h.StreamMessages("API_DLQ") == 0);
  CHECK(Occurrences(testsupport::ReadFile(h.log_path(0)), "the server refuses it for its size") ==
        1);
  // The operator raises the limit: the next try moves it, with its reason, and the count stops.
  h.SetMaxMsgSize("API_DLQ", -1);
  CHECK(testsupport::WaitFor([&] { return h.StreamMessages("API_DLQ") == 1; }, 20'000));
  std::string judged;
  if (!h.WaitDrained("API_METRICS", 10'000, &judged)) FAIL_CHECK("not drained: " << judged);
  auto dlq = h.ReadDlq();
  REQUIRE(dlq.size() == 1);
  CHECK(dlq[0].msg_id == "over-dlq-limit");
  CHECK_THAT(dlq[0].reason, Catch::Contains("batch cannot be decoded"));
  // At no poll through 1.5 of METRICSWRITER_DLQ_RETRY (2 s) does the count rise again.
  const double failed = h.Metric(0, kFailures, "cause=\"too_large\"");
  CHECK(
      testsupport::HoldsFor([&] { return h.Metric(0, kFailures, "cause=\"too_large\"") == failed; },
                            "no more too_large failures", 3000, 100) == "");
  CHECK(h.Metric(0, "metricswriter_dead_lettered_total", "reason=\"decode\"") == 1);
}

TEST_CASE("a dead letter while API_DLQ is gone counts as unavailable and waits", "[integration]") {
  mwtest::Harness h;
  h.DeleteStream("API_DLQ");
  h.Publish("acme", Undecodable(100), "no-dlq");
  auto w = h.StartWriter(0);
  CHECK(testsupport::WaitFor([&] { return h.Metric(0, kFailures, "cause=\"unavailable\"") >= 2; },
                             30'000));
  CHECK(h.Metric(0, kFailures, "cause=\"too_large\"") == 0);
  CHECK(h.StreamMessages("API_METRICS") == 1);
  CHECK(Occurrences(testsupport::ReadFile(h.log_path(0)), "could not move sequence") == 1);
  std::string out;
  REQUIRE(h.Platformctl("init", "", &out) == 0);  // API_DLQ back
  CHECK(testsupport::WaitFor([&] { return h.StreamMessages("API_DLQ") == 1; }, 20'000));
  std::string judged;
  if (!h.WaitDrained("API_METRICS", 10'000, &judged)) FAIL_CHECK("not drained: " << judged);
}
