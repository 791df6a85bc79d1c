// crash_guard_bench: how many redelivered messages a second the crash-loop guard lets a reader
// read (common/crash_guard_kv.h), against a real nats-server on this machine.
//
//   crash_guard_bench [--messages N] [--batch B] [--rounds R]
//
// Starts a single nats-server (tests/support: NATS_SERVER_BIN or the default one), creates the
// buckets with platformctl init, and reads N redeliveries (delivery 2, no marker) in fetched
// batches of B three ways, R rounds each, alternating:
// - one by one: Before() then Done() per message (a marker read, written and removed: three
//   round trips), as the metricswriter reads its messages (each a whole metric batch, stored
//   in a transaction of its own: the guard is a small part of its cost);
// - batched: Prefetch() per batch, then Before() and a deferred Done() per message, Flush()
//   per batch, as the replayer's fetch thread does (one round trip a message);
// - the ceiling: one KV put per message and nothing else, one round trip each.
// Prints the best round's messages a second for each. Not run by ctest: figures in
// docs/measured.md ("The crash-loop guard's cost per redelivery").
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "common/crash_guard_kv.h"
#include "common/nats_kv.h"
#include "common/topology.h"
#include "tests/support/nats_cluster.h"
#include "tests/support/test_stack.h"

namespace {

using Clock = std::chrono::steady_clock;

double Rate(int messages, Clock::time_point t0) {
  return messages / std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Times the crash-loop guard per redelivered message, one by one and batched"};
  int messages = 3000;
  int batch = 100;
  int rounds = 3;
  app.add_option("--messages", messages, "redeliveries per round")->check(CLI::Range(1, 1000000));
  app.add_option("--batch", batch, "messages per fetched batch")->check(CLI::Range(1, 1000));
  app.add_option("--rounds", rounds, "rounds of each way")->check(CLI::Range(1, 100));
  CLI11_PARSE(app, argc, argv);

  testsupport::TestStack stack({"nats"});
  auto client = testsupport::InitAndConnect(stack);
  auto guard = common::CrashGuard::Bind(*client, "bench", "bench-1");
  auto kv = common::KvBucket::Bind(*client, common::topology::kCrashGuardBucket);
  if (!guard->on() || !kv.ok()) {
    std::fprintf(stderr, "no crash_guard bucket\n");
    return 1;
  }
  uint64_t next_seq = 1;
  double one_by_one = 0, batched = 0, ceiling = 0;
  for (int r = 0; r < rounds; ++r) {
    auto t0 = Clock::now();
    for (int i = 0; i < messages; ++i) guard->Done(guard->Before(next_seq++, 2));
    one_by_one = std::max(one_by_one, Rate(messages, t0));

    t0 = Clock::now();
    for (int done = 0; done < messages; done += batch) {
      std::vector<std::pair<uint64_t, uint64_t>> fetched;
      for (int i = 0; i < std::min(batch, messages - done); ++i)
        fetched.emplace_back(next_seq++, 2);
      guard->Prefetch(fetched);
      for (const auto& [seq, delivered] : fetched) {
        guard->Done(guard->Before(seq, delivered), /*defer=*/true);
      }
      guard->Flush();
    }
    batched = std::max(batched, Rate(messages, t0));

    t0 = Clock::now();
    for (int i = 0; i < messages; ++i) {
      if (!(*kv)->Put("ceiling." + std::to_string(i), "x").ok()) return 1;
    }
    ceiling = std::max(ceiling, Rate(messages, t0));
  }
  auto left = (*kv)->Keys();
  size_t markers = 0;
  if (left.ok()) {
    for (const auto& key : *left) {
      auto got = (*kv)->Get(key);
      if (key.rfind("bench.", 0) == 0 && got.ok() && got->has_value()) ++markers;
    }
  }
  std::printf("crash-loop guard, %d redeliveries a round in batches of %d, best of %d rounds:\n",
              messages, batch, rounds);
  std::printf("  one by one (marker read, written, removed): %8.0f messages/s\n", one_by_one);
  std::printf("  batched (reads at once, removal with next): %8.0f messages/s\n", batched);
  std::printf("  ceiling (one KV put each, nothing else):    %8.0f messages/s\n", ceiling);
  std::printf("  markers left behind: %zu\n", markers);
  return markers == 0 ? 0 : 1;
}
