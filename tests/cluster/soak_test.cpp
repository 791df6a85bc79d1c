// The soak (issue 6, fault test 6): the full topology (3 NATS nodes, 2 replayers, 2
// metricswriters, Umami, PostgreSQL) under a steady mixed load for SOAK_MINUTES (default 20),
// with one random kill -9 every 2 minutes among the four services and the three NATS nodes (the
// victim comes back after 5 s). At the end it prints the ledger: published / stored /
// dead-lettered / duplicated / lost, for web events and metric batches. Lost must be 0.
// Hidden from the default run ([.][soak]); bench/soak runs it.
#include <signal.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <utility>

#include "tests/cluster/cluster_fixture.h"
#include "tests/support/test_stack.h"

using cluster_test::ClusterFixture;
using cluster_test::Load;
using cluster_test::Service;
using Clock = std::chrono::steady_clock;

namespace {

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != 0 ? std::atoi(v) : fallback;
}

}  // namespace

TEST_CASE("soak: steady mixed load with a random kill every 2 minutes loses nothing",
          "[.][soak][cluster][umami]") {
  const int minutes = EnvInt("SOAK_MINUTES", 20);
  const int events_per_s = EnvInt("SOAK_EVENTS_PER_S", 25);
  const int batches_per_s = EnvInt("SOAK_BATCHES_PER_S", 15);
  const int kill_every_s = EnvInt("SOAK_KILL_EVERY_S", 120);
  ClusterFixture f;
  const std::string urls = f.Urls(f.AllNodes());
  // Slots 0-1 replayers, 2-3 metricswriters.
  Service services[4];
  const char* names[4] = {"replayer-a", "replayer-b", "writer-a", "writer-b"};
  auto start = [&](int i) {
    if (i < 2) {
      f.StartReplayer(urls, {{"INSTANCE_NAME", names[i]}, {"REPLAYER_ACK_WAIT", "10s"}});
      services[i] = std::exchange(f.replayer, Service{});
    } else {
      f.StartWriter(urls, {{"INSTANCE_NAME", names[i]}, {"METRICSWRITER_ACK_WAIT", "10s"}});
      services[i] = std::exchange(f.writer, Service{});
    }
  };
  for (int i = 0; i < 4; ++i) start(i);

  const int seconds = minutes * 60;
  Load load(
      *f.client, f.sites,
      {"s", events_per_s * seconds, batches_per_s * seconds, static_cast<double>(seconds), 3});
  std::mt19937 rng(static_cast<unsigned>(EnvInt("SOAK_SEED", 1)));
  auto began = Clock::now();
  int kills = 0;
  std::string kill_log;
  while (Clock::now() - began < std::chrono::seconds(seconds - 10)) {
    std::this_thread::sleep_for(std::chrono::seconds(kill_every_s));
    if (Clock::now() - began >= std::chrono::seconds(seconds - 10)) break;
    int victim = static_cast<int>(rng() % 7);  // 0-3 services, 4-6 NATS nodes 1-3
    double at = std::chrono::duration<double>(Clock::now() - began).count();
    if (victim < 4) {
      services[victim].proc->Signal(SIGKILL);
      services[victim].proc->Wait(5'000);
      std::this_thread::sleep_for(std::chrono::seconds(5));
      start(victim);
      kill_log +=
          "  " + std::to_string(static_cast<int>(at)) + " s: kill -9 " + names[victim] + "\n";
    } else {
      std::string node = f.stack.NatsNode(victim - 3);
      f.stack.Kill(node);
      std::this_thread::sleep_for(std::chrono::seconds(5));
      f.stack.Start(node);
      kill_log += "  " + std::to_string(static_cast<int>(at)) + " s: kill -9 " + node + "\n";
    }
    ++kills;
  }
  load.Join();
  bool web_drained = f.WaitDrained("WEB_EVENTS", 600'000);
  bool api_drained = f.WaitDrained("API_METRICS", 600'000);

  const auto& eids = load.event_ids();
  const auto& bids = load.batch_ids();
  auto missing_events = f.MissingEvents(eids);
  auto missing_batches = f.MissingBatches(bids);
  int64_t web_dlq = static_cast<int64_t>(f.Read("WEB_DLQ").messages);
  int64_t api_dlq = static_cast<int64_t>(f.Read("API_DLQ").messages);
  int64_t dup_events = f.DuplicateEvents();
  int64_t stored_batches = f.StoredBatches();
  // A message is lost when it is neither stored nor dead-lettered. The DLQs of a fresh stack hold
  // only this run's messages, so every missing message beyond the DLQ counts is lost.
  int64_t lost_events = std::max<int64_t>(0, static_cast<int64_t>(missing_events.size()) - web_dlq);
  int64_t lost_batches =
      std::max<int64_t>(0, static_cast<int64_t>(missing_batches.size()) - api_dlq);
  std::printf(
      "soak ledger (%d min, %d kills, %d events/s, %d batches/s)\n%s"
      "  web events:    published %zu, stored %zu, dead-lettered %lld, duplicated %lld, lost "
      "%lld\n"
      "  metric batches: published %zu, stored %lld, dead-lettered %lld, duplicated 0 (batch id "
      "key), lost %lld\n"
      "  publishes retried through elections: %d, longest publish %lld ms; drained: web %s, api "
      "%s\n",
      minutes, kills, events_per_s, batches_per_s, kill_log.c_str(), eids.size(),
      eids.size() - missing_events.size(), static_cast<long long>(web_dlq),
      static_cast<long long>(dup_events), static_cast<long long>(lost_events), bids.size(),
      static_cast<long long>(stored_batches), static_cast<long long>(api_dlq),
      static_cast<long long>(lost_batches), load.retried(),
      static_cast<long long>(load.longest_ms()), web_drained ? "yes" : "NO",
      api_drained ? "yes" : "NO");
  std::fflush(stdout);
  CHECK(load.failures().empty());
  CHECK(web_drained);
  CHECK(api_drained);
  CHECK(lost_events == 0);
  CHECK(lost_batches == 0);
}
