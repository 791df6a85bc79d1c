// The metricswriter through database faults: PostgreSQL stopped while batches keep arriving, the
// database read-only, and the writer killed with -9. Nothing is lost, nothing is stored twice,
// nothing is dead-lettered; held batches are kept alive through 4 ack waits (4 s each, the
// harness's METRICSWRITER_ACK_WAIT) after the writer shows it holds batches and retries, and the
// retry counter keeps rising through them.
#include <signal.h>
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <thread>

#include "tests/metricswriter/harness.h"
#include "tests/support/wait.h"

using namespace mwtest;  // NOLINT: the harness (Harness, JsonBatch, kBatches, Sleep...)

namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kAckWait = std::chrono::seconds(4);  // METRICSWRITER_ACK_WAIT of the harness
constexpr int kOutageAckWaits = 4;

// Publishes a 4-point batch every 25 ms (ids <prefix>-0, -1, ...) on its own thread until
// stopped. It is the only user of the harness's Publish while it runs (the test thread only
// scrapes, queries and stops or starts PostgreSQL meanwhile).
class Flow {
 public:
  Flow(Harness& h, std::string prefix)
      : thread_([this, &h, prefix = std::move(prefix)] {
          while (!stop_) {
            h.Publish("t1", JsonBatch(4, NowNs(), sent_), prefix + "-" + std::to_string(sent_));
            ++sent_;
            Sleep(25);  // the traffic's pace, not a wait
          }
        }) {}
  ~Flow() { Stop(); }
  // Stops publishing; returns how many batches were published.
  int Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    return sent_;
  }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<int> sent_{0};
  std::thread thread_;
};

// Holds the outage (already begun) until the writer shows it waits it out (the database down,
// retries counted, batches held), then through kOutageAckWaits ack waits with the database down
// and nothing dead-lettered at every poll, and the retry counter rising in between.
void HoldOutage(Harness& h, const std::string& retry_labels) {
  auto retries = [&] { return h.Metric(0, "metricswriter_database_retries_total", retry_labels); };
  REQUIRE(testsupport::WaitFor(
      [&] {
        return h.Metric(0, "metricswriter_database_up") == 0 && retries() > 0 &&
               h.Metric(0, "metricswriter_held_batches") > 0;
      },
      30'000));
  const double early_retries = retries();
  const auto since = Clock::now();
  CHECK(testsupport::WaitKeeping([&] { return Clock::now() - since >= kOutageAckWaits * kAckWait; },
                                 std::to_string(kOutageAckWaits) + " ack waits",
                                 [&] {
                                   return h.Metric(0, "metricswriter_database_up") == 0 &&
                                          h.Metric(0, "metricswriter_dead_lettered_total") == 0;
                                 },
                                 "database down and nothing dead-lettered", 60'000, 250) == "");
  CHECK(retries() > early_retries);
  CHECK(h.Metric(0, "metricswriter_database_up") == 0);
}

// After the fault: the writer stores again, and batches published since are stored too.
void WaitRecovered(Harness& h) {
  REQUIRE(
      testsupport::WaitFor([&] { return h.Metric(0, "metricswriter_database_up") == 1; }, 60'000));
  const int64_t stored = h.Count(kBatches);
  REQUIRE(testsupport::WaitFor([&] { return h.Count(kBatches) >= stored + 40; }, 60'000));
}

// Every published batch stored once, nothing dead-lettered, nothing redelivered: the batches
// held through the outage were kept alive, not handed out again after an ack wait.
void CheckAllStoredOnce(Harness& h, int published) {
  REQUIRE(h.WaitCount(kBatches, published, 60'000) == published);
  // Every message acked (API_METRICS is a work queue): no redelivery can come any more.
  CHECK(testsupport::WaitFor([&] { return h.StreamMessages("API_METRICS") == 0; }, 30'000));
  CHECK(h.Count(kBatches) == published);
  CHECK(h.Count(kPoints) == 4LL * published);
  CHECK(h.Metric(0, "metricswriter_batches_stored_total") == published);
  CHECK(h.Metric(0, "metricswriter_messages_received_total") == published);
  CHECK(h.Metric(0, "metricswriter_duplicates_skipped_total") == 0);
  CHECK(h.Metric(0, "metricswriter_database_up") == 1);
  CHECK(h.Metric(0, "metricswriter_dead_lettered_total") == 0);
  CHECK(h.ReadDlq().empty());
}

}  // namespace

TEST_CASE("PostgreSQL stopped through 4 ack waits mid-run loses and dead-letters nothing",
          "[integration]") {
  Harness h;
  auto writer = h.StartWriter(0, {{"LOG_LEVEL", "debug"}});
  Flow flow(h, "c");
  REQUIRE(testsupport::WaitFor([&] { return h.Count(kBatches) >= 100; }, 20'000));
  h.ResetPg();
  h.stack().Stop("pg");  // batches keep arriving, some in a transaction the stop cuts
  const auto stopped = Clock::now();
  HoldOutage(h, "");
  h.stack().Start("pg");
  WaitRecovered(h);  // batches keep arriving while the writer catches up
  const int published = flow.Stop();
  INFO("published " << published << " batches, the outage lasted "
                    << std::chrono::duration<double>(Clock::now() - stopped).count() << " s");
  CheckAllStoredOnce(h, published);
}

TEST_CASE("read-only database through 4 ack waits holds batches then stores them",
          "[integration]") {
  Harness h;
  auto writer = h.StartWriter(0);
  Flow flow(h, "ro");
  REQUIRE(testsupport::WaitFor([&] { return h.Count(kBatches) >= 100; }, 20'000));
  auto& pg = h.pg();
  REQUIRE(pg.Exec("ALTER DATABASE metrics SET default_transaction_read_only = on").ok());
  // The setting applies to new sessions: end the writer's so it reconnects into read-only.
  // Wait (up to 5 s) for each to be gone, not only signalled: a session in the middle of a
  // commit finishes it first, and the count below must come after.
  REQUIRE(pg.Exec("SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity "
                  "WHERE application_name = 'metricswriter'")
              .ok());
  const int64_t stored_then = h.Count(kBatches);
  HoldOutage(h, "kind=\"retryable\"");
  CHECK(h.Count(kBatches) == stored_then);
  REQUIRE(pg.Exec("ALTER DATABASE metrics RESET default_transaction_read_only").ok());
  WaitRecovered(h);
  const int published = flow.Stop();
  INFO("published " << published << " batches");
  CheckAllStoredOnce(h, published);
  std::string log = testsupport::Capture("cat " + h.log_path(0));
  CHECK_THAT(log, Catch::Contains("SQLSTATE 25006"));
}

TEST_CASE("kill -9 mid-run loses no batch and stores none twice", "[integration]") {
  Harness h;
  const int n = 3000;
  for (int i = 0; i < n; ++i) h.Publish("t1", JsonBatch(5, NowNs()), "k-" + std::to_string(i));
  auto writer = h.StartWriter(0, {{"METRICSWRITER_GROUP_BATCHES", "100"}});
  testsupport::WaitFor([&] { return h.Count(kBatches) >= 300; }, 20'000);
  writer->Signal(SIGKILL);
  writer->Wait(5'000);
  int64_t at_kill = h.Count(kBatches);
  INFO("stored when killed: " << at_kill);
  CHECK(at_kill < n);
  auto again = h.StartWriter(1);  // redeliveries of the unacked ones arrive after the ack wait
  REQUIRE(h.WaitCount(kBatches, n, 60'000) == n);
  // Any late redelivery of an acked-but-lost batch must add nothing: wait until every message is
  // acked (API_METRICS is a work queue), after which none can come.
  CHECK(testsupport::WaitFor([&] { return h.StreamMessages("API_METRICS") == 0; }, 30'000));
  CHECK(h.Count(kBatches) == n);
  CHECK(h.Count(kPoints) == 5 * n);
  CHECK(h.ReadDlq().empty());
}
