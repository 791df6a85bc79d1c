// The metricswriter holds at most METRICSWRITER_MAX_BYTES_IN_FLIGHT of batches (as received plus
// decoded), against a real nats-server and PostgreSQL: a backlog of big batches drains within it,
// a batch bigger than the whole budget is stored alone, and nats.c never drops a message as a
// slow consumer.
#include <catch2/catch.hpp>

#include <atomic>
#include <fstream>
#include <sstream>
#include <thread>

#include "metricswriter/proto/otlp_metrics.pb.h"
#include "tests/metricswriter/harness.h"

namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

// One gauge of `points` points without attributes (about 30 bytes each on the wire).
std::string ProtoBatch(int points, int64_t time_ns) {
  mw::otlp::ExportMetricsServiceRequest req;
  auto* rm = req.add_resource_metrics();
  auto* a = rm->mutable_resource()->add_attributes();
  a->set_key("service.name");
  a->mutable_value()->set_string_value("budget");
  auto* m = rm->add_scope_metrics()->add_metrics();
  m->set_name("big.gauge");
  for (int p = 0; p < points; ++p) {
    auto* dp = m->mutable_gauge()->add_data_points();
    dp->set_start_time_unix_nano(static_cast<uint64_t>(time_ns));
    dp->set_time_unix_nano(static_cast<uint64_t>(time_ns + p));
    dp->set_as_double(p * 0.5);
  }
  return req.SerializeAsString();
}

// Samples a gauge of writer `index` every 10 ms while alive; max() is the largest seen.
class Sampler {
 public:
  Sampler(mwtest::Harness& h, std::string name) : h_(h), name_(std::move(name)) {
    thread_ = std::thread([this] {
      while (!done_) {
        const std::string text = h_.Scrape(0);
        if (!text.empty()) {
          double v = h_.Metric(0, name_);
          if (v > max_) max_ = v;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));  // the sampling interval
      }
    });
  }
  ~Sampler() { Stop(); }
  void Stop() {
    done_ = true;
    if (thread_.joinable()) thread_.join();
  }
  double max() const { return max_; }

 private:
  mwtest::Harness& h_;
  std::string name_;
  std::atomic<bool> done_{false};
  std::atomic<double> max_{0};
  std::thread thread_;
};

}  // namespace

TEST_CASE("a backlog of big batches drains within METRICSWRITER_MAX_BYTES_IN_FLIGHT",
          "[integration]") {
  mwtest::Harness h;
  const int64_t now = mwtest::NowNs();
  constexpr int kBigBatches = 12;
  constexpr int kPoints = 35'000;  // about 1 MB each, about 3 MB once decoded
  for (int i = 0; i < kBigBatches; ++i) {
    h.Publish("acme", ProtoBatch(kPoints, now + i * 100'000), "big-" + std::to_string(i),
              "application/x-protobuf");
  }
  auto w = h.StartWriter(0, {{"METRICSWRITER_MAX_BYTES_IN_FLIGHT", "16MiB"}});
  Sampler held(h, "metricswriter_held_bytes");
  CHECK(h.WaitCount(mwtest::kBatches, kBigBatches, 120'000) == kBigBatches);
  CHECK(h.Count(mwtest::kPoints) == int64_t{kBigBatches} * kPoints);
  testsupport::WaitFor([&] { return h.Metric(0, "metricswriter_held_bytes") == 0; }, 5'000);
  held.Stop();
  INFO("largest metricswriter_held_bytes seen: " << held.max());
  CHECK(held.max() > 2 * kMiB);  // it did hold batches (the sampler saw them)
  CHECK(held.max() <= 16 * kMiB);
  CHECK(h.Metric(0, "metricswriter_held_bytes") == 0);
  CHECK(h.Metric(0, "metricswriter_dead_lettered_total") == 0);
  CHECK(testsupport::ReadFile(h.log_path(0)).find("Slow Consumer") == std::string::npos);
}

TEST_CASE("a batch bigger than METRICSWRITER_MAX_BYTES_IN_FLIGHT is stored alone",
          "[integration]") {
  mwtest::Harness h;
  const int64_t now = mwtest::NowNs();
  for (int i = 0; i < 5; ++i) {
    h.Publish("acme", mwtest::JsonBatch(20, now + i), "small-a" + std::to_string(i));
  }
  // 3 MB on the wire, about 10 MB decoded: ten times the budget.
  h.Publish("acme", ProtoBatch(100'000, now), "huge", "application/x-protobuf");
  for (int i = 0; i < 5; ++i) {
    h.Publish("acme", mwtest::JsonBatch(20, now + 10 + i), "small-b" + std::to_string(i));
  }
  auto w = h.StartWriter(0, {{"METRICSWRITER_MAX_BYTES_IN_FLIGHT", "1MiB"}});
  CHECK(h.WaitCount(mwtest::kBatches, 11, 60'000) == 11);
  CHECK(h.Count(mwtest::kPoints) == 10 * 20 + 100'000);
  CHECK(h.Count("SELECT count(*) FROM metrics.batches WHERE batch_id = 'huge'") == 1);
  // Still fetching afterwards: not wedged.
  h.Publish("acme", mwtest::JsonBatch(20, now + 100), "after");
  CHECK(h.WaitCount(mwtest::kBatches, 12, 20'000) == 12);
  testsupport::WaitFor([&] { return h.Metric(0, "metricswriter_held_bytes") == 0; }, 5'000);
  CHECK(h.Metric(0, "metricswriter_held_bytes") == 0);
  CHECK(h.Metric(0, "metricswriter_held_batches") == 0);
  CHECK(testsupport::ReadFile(h.log_path(0)).find("Slow Consumer") == std::string::npos);
}
