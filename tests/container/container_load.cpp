// container_load: the edge's traffic for tests/container. Publishes web events and OTLP/JSON
// metric batches, interleaved and spread evenly over --seconds, each one until the stream acks
// it (the same Nats-Msg-Id on every try, so a try whose answer was lost is stored once).
//
//   container_load --prefix P --site ID [--events N] [--batches M] [--seconds S] [--points K]
//
// NATS_URL, NATS_USER, NATS_PASSWORD as for the services (the test runs it as an edge user).
// Event i has the id and Umami URL path "/P-i" (100 visitors, in order per visitor); batch i
// goes to api.metrics.t1 with the batch id "P-b<i>" and K gauge points. Prints one JSON line:
// {"events":N,"batches":M,"retried":R,"longest_ms":L,"failed":F,"seconds":S}; exit 0 when every
// message was acked, 1 when one was not (its id on stderr), 3 when NATS cannot be reached.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <thread>

#include "common/nats_client.h"
#include "tests/metricswriter/harness.h"
#include "tests/support/nats_cluster.h"
#include "tests/support/web_events.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kVisitors = 100;
constexpr int kPublishTimeoutMs = 90'000;  // a NATS node restarting, an election

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"publish test web events and metric batches until each is acked"};
  std::string prefix, site;
  int events = 0, batches = 0, points = 3;
  double seconds = 0;
  app.add_option("--prefix", prefix, "id prefix")->required();
  app.add_option("--site", site, "Umami website id")->required();
  app.add_option("--events", events)->check(CLI::NonNegativeNumber);
  app.add_option("--batches", batches)->check(CLI::NonNegativeNumber);
  app.add_option("--seconds", seconds, "spread over this long (0: as fast as acks come)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--points", points, "points per batch")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  auto client = testsupport::ConnectFromEnvironment();
  if (!client) {
    std::cerr << "container_load: " << client.error().message << "\n";
    return 3;
  }

  const int total = events + batches;
  const auto start = Clock::now();
  int e = 0, b = 0, retried = 0, failed = 0;
  int64_t longest_ms = 0;
  for (int k = 0; k < total; ++k) {
    std::this_thread::sleep_until(
        start + std::chrono::microseconds(static_cast<int64_t>(seconds * 1e6 * k / total)));
    // The two kinds interleaved in proportion.
    bool event = b >= batches || (e < events && int64_t{e} * batches <= int64_t{b} * events);
    common::OutMessage m;
    if (event) {
      testsupport::TestEvent ev;
      ev.visitor = e % kVisitors;
      ev.site = site;
      ev.seq = e / kVisitors;
      ev.id = prefix + "-" + std::to_string(e);
      ev.url = "/" + ev.id;
      m = testsupport::EventMessage(ev);
      ++e;
    } else {
      m.subject = "api.metrics.t1";
      m.data = mwtest::JsonBatch(points, mwtest::NowNs(), b);
      m.msg_id = prefix + "-b" + std::to_string(b);
      m.headers.emplace_back("Content-Type", "application/json");
      ++b;
    }
    auto t0 = Clock::now();
    int tries = 0;
    auto ack = testsupport::PublishUntilAcked(**client, m, kPublishTimeoutMs, &tries);
    longest_ms = std::max<int64_t>(
        longest_ms,
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count());
    if (tries > 1) ++retried;
    if (!ack) {
      ++failed;
      std::cerr << "container_load: not acked: " << m.msg_id << ": " << ack.error().message << "\n";
    }
  }
  double took = std::chrono::duration<double>(Clock::now() - start).count();
  std::printf(
      "{\"events\":%d,\"batches\":%d,\"retried\":%d,\"longest_ms\":%lld,\"failed\":%d,"
      "\"seconds\":%.1f}\n",
      e, b, retried, static_cast<long long>(longest_ms), failed, took);
  return failed == 0 ? 0 : 1;
}
