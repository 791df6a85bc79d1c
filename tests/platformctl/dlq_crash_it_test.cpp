// Crash safety of platformctl dlq replay: kill -9 at a random point of a 5,000-message replay,
// run it again, and every message is on the origin stream exactly once (the stream's duplicate
// window catches the one that was published but not erased), reported as already there, with
// the DLQ empty. Ten times, each with another kill point.
#include <nats/nats.h>
#include <signal.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "platformctl/dlq/run.h"
#include "tests/platformctl/dlq_fixture.h"

using testsupport::TestStack;

TEST_CASE("dlq replay killed with -9 and run again stores every message exactly once",
          "[integration][dlq]") {
  constexpr int kN = 5000;
  const int kRuns = std::getenv("DLQ_CRASH_RUNS") ? std::atoi(std::getenv("DLQ_CRASH_RUNS")) : 10;
  TestStack stack({"nats"});
  dlqtest::Init(stack);
  auto client = testsupport::ConnectNats(stack);
  std::random_device rd;
  const unsigned seed = rd();
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> kill_after(50, kN - 800);
  INFO("random seed " << seed);

  uint64_t total_already = 0;
  for (int run = 0; run < kRuns; ++run) {
    if (run == 1) {
      // The first run used WEB_DLQ as provisioned (file store). nats-server syncs the block
      // file to disk on every secure erase (about 1.5 ms each here), and 45,000 more of them
      // would take most of the test budget; the store does not change what is tested (publish,
      // ack, then erase; the stream's duplicate window), so the other runs use a memory-backed
      // WEB_DLQ with the same settings. The purge test covers erasure on the file store.
      jsStreamInfo* si = nullptr;
      REQUIRE(js_GetStreamInfo(&si, client->js(), "WEB_DLQ", nullptr, nullptr) == NATS_OK);
      jsStreamConfig cfg = *si->Config;  // shallow: the strings stay owned by si
      cfg.Storage = js_MemoryStorage;
      REQUIRE(js_DeleteStream(client->js(), "WEB_DLQ", nullptr, nullptr) == NATS_OK);
      jsStreamInfo* created = nullptr;
      REQUIRE(js_AddStream(&created, client->js(), &cfg, nullptr, nullptr) == NATS_OK);
      jsStreamInfo_Destroy(created);
      jsStreamInfo_Destroy(si);
    }
    REQUIRE(js_PurgeStream(client->js(), "WEB_EVENTS", nullptr, nullptr) == NATS_OK);
    const std::string prefix = "run" + std::to_string(run) + "-ev-";
    std::vector<common::OutMessage> msgs;
    for (int i = 1; i <= kN; ++i) {
      dlqtest::Seed s;
      s.key = "site-" + std::to_string(i % 10);
      s.visitor = "v" + std::to_string(i);
      s.reason = "umami failed this event 4 times while its health checks passed";
      s.origin_seq = static_cast<uint64_t>((run + 1) * 100000 + i);  // distinct DLQ msg ids
      s.msg_id = prefix + std::to_string(i);
      msgs.push_back(dlqtest::DeadLetter(s));
    }
    dlqtest::PublishAll(*client, msgs);
    REQUIRE(dlqtest::Count(*client, "WEB_DLQ") == kN);

    // Kill once the replay has moved a random number of messages.
    const int threshold = kill_after(gen);
    {
      testsupport::ChildProcess child({testsupport::BinaryDir() + "/platformctl/platformctl", "dlq",
                                       "replay", "--queue", "web", "--all"},
                                      {{"NATS_URL", stack.Env("NATS_URL")}},
                                      stack.dir() + "/killed.log");
      auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
      while (child.Running() && std::chrono::steady_clock::now() < deadline &&
             dlqtest::Count(*client, "WEB_DLQ") > static_cast<uint64_t>(kN - threshold)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));  // the poll interval
      }
      REQUIRE(child.Running());  // killed mid-run, not after it finished
      child.Signal(SIGKILL);
      REQUIRE(child.Wait(5000) == 128 + SIGKILL);
    }
    // The server still works off the requests it had received when the process died: read
    // the counts once they stopped moving.
    uint64_t origin = 0, left = 0;
    auto settled = [&] {
      uint64_t o = dlqtest::Count(*client, "WEB_EVENTS"), l = dlqtest::Count(*client, "WEB_DLQ");
      bool same = o == origin && l == left;
      origin = o;
      left = l;
      return same;
    };
    REQUIRE(testsupport::WaitFor(
        [&] {
          // Settled = the same counts 250 ms apart: what "stopped moving" means here.
          std::this_thread::sleep_for(std::chrono::milliseconds(250));
          return settled();
        },
        10'000));
    INFO("run " << run << ": killed after about " << threshold << ", origin " << origin
                << ", left in DLQ " << left);
    // Never erased before published; at most the batch under way is in both.
    REQUIRE(origin + left >= static_cast<uint64_t>(kN));
    const uint64_t in_both = origin + left - kN;
    CHECK(in_both <= platformctl::dlq::kBatch);
    CHECK(left > 0);

    auto rerun_start = std::chrono::steady_clock::now();
    auto r = dlqtest::Ctl(stack, "dlq replay --queue web --all --json");
    double rerun_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - rerun_start).count();
    INFO(r.out << r.err);
    REQUIRE(r.rc == 0);
    auto doc = nlohmann::json::parse(r.out);
    CHECK(doc["already_there"] == in_both);
    CHECK(doc["replayed"] == left - in_both);
    CHECK(doc["skipped"] == 0);
    CHECK(doc["failed"] == 0);
    total_already += doc["already_there"].get<uint64_t>();
    std::fprintf(stderr,
                 "crash run %d: killed after ~%d, %llu in both, rerun replayed %llu in %.2f s\n",
                 run, threshold, static_cast<unsigned long long>(in_both),
                 static_cast<unsigned long long>(left - in_both), rerun_s);

    CHECK(dlqtest::Count(*client, "WEB_DLQ") == 0);
    auto events = dlqtest::ReadAll(*client, "WEB_EVENTS");
    REQUIRE(events.size() == static_cast<size_t>(kN));
    std::set<int> seen;
    for (const auto& h : events) {
      REQUIRE(h.msg_id.rfind(prefix, 0) == 0);
      int i = std::stoi(h.msg_id.substr(prefix.size()));
      CHECK(h.msg_id.find(".replay.WEB_DLQ.") != std::string::npos);
      CHECK(seen.insert(i).second);  // exactly once
    }
    CHECK(seen.size() == static_cast<size_t>(kN));
    CHECK(*seen.begin() == 1);
    CHECK(*seen.rbegin() == kN);
  }
  CHECK_THAT(testsupport::Capture("cat " + stack.dir() + "/killed.log"),
             !Catch::Contains(dlqtest::kMarker));
  CHECK_THAT(dlqtest::AllOutput(), !Catch::Contains(dlqtest::kMarker));
  std::fprintf(stderr, "crash runs: %d, messages already there on rerun: %llu\n", kRuns,
               static_cast<unsigned long long>(total_already));
}
