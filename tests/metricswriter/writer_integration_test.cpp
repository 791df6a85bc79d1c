// The metricswriter against a real nats-server and PostgreSQL 15 (TestStack): stored exactly
// once, nothing lost to outages, poison set aside alone, clean stop.
#include <signal.h>
#include <catch2/catch.hpp>

#include "tests/metricswriter/harness.h"

using namespace mwtest;  // NOLINT: the harness (Harness, JsonBatch, kBatches, Sleep...)

TEST_CASE("the same batch published three times is stored once", "[integration]") {
  Harness h;
  auto writer = h.StartWriter(0);
  auto second = h.StartWriter(1);  // two writers on the consumer, as during a lease hand-over
  std::string body = JsonBatch(5, NowNs());
  // Distinct message ids (the stream's duplicate window would drop equal ones) that all name
  // batch "dup-1": the original and two replays from API_DLQ.
  h.Publish("acme", body, "dup-1");
  h.Publish("acme", body, "dup-1.replay.API_DLQ.5");
  h.Publish("acme", body, "dup-1.replay.API_DLQ.5.replay.API_DLQ.9");
  h.Publish("acme", body, "other-1");
  REQUIRE(h.WaitCount(kBatches, 2, 15'000) == 2);
  // All four handled: acked (API_METRICS is a work queue), so the counts below are final.
  CHECK(testsupport::WaitFor([&] { return h.StreamMessages("API_METRICS") == 0; }, 15'000));
  CHECK(h.Count(kBatches) == 2);
  CHECK(h.Count(kPoints) == 10);
  CHECK(h.Count("SELECT count(*) FROM metrics.batches WHERE batch_id = 'dup-1'") == 1);
  CHECK(h.Metric(0, "metricswriter_duplicates_skipped_total") +
            h.Metric(1, "metricswriter_duplicates_skipped_total") ==
        2);
  CHECK(h.ReadDlq().empty());
  // Five series (one per point attribute), shared by both stored batches.
  CHECK(h.Count("SELECT count(*) FROM metrics.series") == 5);
}

TEST_CASE("bad messages go to API_DLQ with reasons naming the fault", "[integration]") {
  Harness h;
  auto writer = h.StartWriter(0);
  std::string good = JsonBatch(2, NowNs());
  h.Publish("t1", "{\"resourceMetrics\": [", "garbage-json");
  h.Publish("t1", std::string("\x0a\x05\x0a\x03", 4), "truncated-pb", "application/x-protobuf");
  h.Publish("t1", good, "wrong-type", "text/plain");
  h.Publish("t1", good, std::nullopt);  // no Nats-Msg-Id
  h.Publish("t1", good, "bad id with spaces");
  h.Publish("t1", good, "good-1");
  h.Publish("t1", good, "good-2", std::nullopt);  // no Content-Type: sniffed as JSON
  REQUIRE(h.WaitCount(kBatches, 2, 15'000) == 2);
  std::vector<mwtest::DlqMessage> dlq;
  testsupport::WaitFor([&] { return (dlq = h.ReadDlq()).size() >= 5; }, 10'000);
  REQUIRE(dlq.size() == 5);
  std::map<std::string, std::string> reason_by_id;
  for (const auto& d : dlq) {
    CHECK(d.subject == "dlq.api.t1");
    CHECK_FALSE(d.origin_seq.empty());
    reason_by_id[d.msg_id] = d.reason;
  }
  CHECK_THAT(reason_by_id["garbage-json"], Catch::StartsWith("batch cannot be decoded: JSON"));
  CHECK(reason_by_id["truncated-pb"] ==
        "batch cannot be decoded: protobuf parse error at byte 0: field 1: length 5 runs past "
        "the end of its message");
  CHECK(reason_by_id["wrong-type"] ==
        "batch cannot be decoded: unsupported content type text/plain");
  CHECK(reason_by_id[""] == "invalid message id");
  CHECK(reason_by_id["bad id with spaces"] == "invalid message id");
  CHECK(h.Metric(0, "metricswriter_dead_lettered_total", "reason=\"decode\"") == 2);
  CHECK(h.Metric(0, "metricswriter_dead_lettered_total", "reason=\"invalid_id\"") == 2);
  std::string log = testsupport::Capture("cat " + h.log_path(0));
  CHECK_THAT(log, Catch::Contains("moved to the dead-letter stream") &&
                      Catch::Contains("subject api.metrics.t1, sequence"));
}

TEST_CASE("one poison batch among 500 is dead-lettered alone", "[integration]") {
  Harness h;
  const int64_t now = NowNs();
  for (int i = 0; i < 500; ++i) {
    if (i == 250) {
      // A point at 1970-01-01: outside the retention window, so no partition takes it and
      // PostgreSQL refuses the row (SQLSTATE 23514).
      h.Publish("t1", JsonBatch(3, 1'000'000'000), "poison");
    }
    h.Publish("t1", JsonBatch(3, now, i), "b-" + std::to_string(i));
  }
  // Started after publishing, so the poison lands inside a full group.
  auto writer = h.StartWriter(0, {{"METRICSWRITER_GROUP_LINGER", "500ms"}});
  REQUIRE(h.WaitCount(kBatches, 500, 30'000) == 500);
  std::vector<mwtest::DlqMessage> dlq;
  testsupport::WaitFor([&] { return !(dlq = h.ReadDlq()).empty(); }, 5'000);
  REQUIRE(dlq.size() == 1);
  CHECK(dlq[0].msg_id == "poison");
  CHECK_THAT(dlq[0].reason, Catch::StartsWith("database rejected this batch: SQLSTATE 23514"));
  CHECK(h.Count(kPoints) == 1500);
  CHECK(h.Count("SELECT count(*) FROM metrics.batches WHERE batch_id = 'poison'") == 0);
  CHECK(h.Metric(0, "metricswriter_dead_lettered_total", "reason=\"db_rejected\"") == 1);
}

TEST_CASE("SIGTERM finishes the work under way and exits 0", "[integration]") {
  Harness h;
  for (int i = 0; i < 300; ++i) h.Publish("t1", JsonBatch(10, NowNs()), "s-" + std::to_string(i));
  auto writer = h.StartWriter(0);
  testsupport::WaitFor([&] { return h.Count(kBatches) > 0; }, 10'000);
  writer->Signal(SIGTERM);
  CHECK(writer->Wait(15'000) == 0);
  int64_t stored = h.Count(kBatches);
  CHECK(h.Count(kPoints) == stored * 10);
  // Whatever it did not store is still in the stream: a new writer stores the rest.
  auto next = h.StartWriter(1);
  CHECK(h.WaitCount(kBatches, 300, 20'000) == 300);
  CHECK(h.Count(kPoints) == 3000);
  CHECK(h.ReadDlq().empty());
}

TEST_CASE("a group mixing stored and new batches stores only the new ones", "[integration]") {
  Harness h;
  h.Publish("t1", JsonBatch(2, NowNs()), "m-1");
  {
    auto first = h.StartWriter(0);
    REQUIRE(h.WaitCount(kBatches, 1, 15'000) == 1);
    first->Signal(SIGTERM);
    REQUIRE(first->Wait(15'000) == 0);
  }
  // One group (published before the writer starts, long linger): a replay of the stored batch
  // between two new ones. The plain insert of the group's ids fails on it and the group goes
  // again with ON CONFLICT; the new ones are stored, the replay is acked as a duplicate.
  h.Publish("t1", JsonBatch(2, NowNs()), "m-2");
  h.Publish("t1", JsonBatch(2, NowNs()), "m-1.replay.API_DLQ.3");
  h.Publish("t1", JsonBatch(2, NowNs()), "m-3");
  auto writer = h.StartWriter(1, {{"METRICSWRITER_GROUP_LINGER", "1s"}});
  REQUIRE(h.WaitCount(kBatches, 3, 15'000) == 3);
  testsupport::WaitFor([&] { return h.Metric(1, "metricswriter_duplicates_skipped_total") == 1; },
                       5'000);
  CHECK(h.Metric(1, "metricswriter_duplicates_skipped_total") == 1);
  CHECK(h.Metric(1, "metricswriter_batches_stored_total") == 2);
  CHECK(h.Metric(1, "metricswriter_group_batches_count") == 1);  // one transaction group
  CHECK(h.Count(kPoints) == 6);
  CHECK(h.ReadDlq().empty());
}
