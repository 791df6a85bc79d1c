// Answers about the site and about the event, against a real Umami 2.10 (issue 36): a website
// Umami does not hold is dead-lettered as such within seconds and holds nobody up; validation
// refusals of many visitors are poison, never a write fault. docs/replayer.md, "What an answer
// is about".
#include <nats/nats.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/dead_letter.h"
#include "tests/platformctl/dlq_fixture.h"
#include "tests/replayer/fixture.h"
#include "tests/support/test_stack.h"

using replayer_test::Fixture;
using testsupport::TestEvent;

namespace {

struct DeadLetter {
  std::string reason, detail;
};

std::vector<DeadLetter> ReadDlq(Fixture& f) {
  std::vector<DeadLetter> out;
  auto web = f.Read("WEB_DLQ");
  for (uint64_t seq = web.first_seq; web.messages > 0 && seq <= web.last_seq; ++seq) {
    natsMsg* m = nullptr;
    if (js_GetMsg(&m, f.client->js(), "WEB_DLQ", seq, nullptr, nullptr) != NATS_OK) continue;
    const char* reason = nullptr;
    const char* detail = nullptr;
    natsMsgHeader_Get(m, common::dead_letter::kReason, &reason);
    natsMsgHeader_Get(m, common::dead_letter::kDetail, &detail);
    out.push_back({reason ? reason : "", detail ? detail : ""});
    natsMsg_Destroy(m);
  }
  return out;
}

std::string Log(const Fixture& f) { return testsupport::ReadFile(f.log_path); }

}  // namespace

TEST_CASE(
    "a website Umami does not hold: 100 events of a visitor in WEB_DLQ within 60 s, others flow",
    "[integration][umami][replayer]") {
  Fixture f(1, 1);
  f.StartReplayer();
  const std::string unknown = testsupport::NewUuid();  // never registered in Umami
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 100; ++i) {
    TestEvent e;
    e.site = unknown;
    e.visitor = 7;
    e.seq = i;
    e.id = "u-" + std::to_string(i);
    f.Publish(e);
  }
  // Good traffic of the registered site, published after the unknown site's events.
  for (int v = 0; v < 20; ++v) {
    for (int i = 0; i < 5; ++i) {
      TestEvent e;
      e.site = f.sites[0];
      e.visitor = v;
      e.seq = i;
      e.id = "g-" + std::to_string(v) + "-" + std::to_string(i);
      f.Publish(e);
    }
  }
  REQUIRE(testsupport::WaitFor([&] { return f.Read("WEB_DLQ").messages == 100; }, 60'000));
  auto took = std::chrono::steady_clock::now() - start;
  INFO("all 100 in WEB_DLQ after "
       << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms");
  CHECK(took < std::chrono::seconds(60));
  REQUIRE(testsupport::WaitFor([&] { return f.StoredEvents("url_path ~ '^/v[0-9]+/'") == 100; },
                               30'000));
  auto dlq = ReadDlq(f);
  REQUIRE(dlq.size() == 100);
  int sent = 0;
  for (const auto& d : dlq) {
    CHECK(d.reason == "umami does not know website " + unknown);
    CHECK_THAT(d.detail, Catch::Contains("HTTP 403: Website not found: " + unknown));
    if (d.detail.rfind("not sent: ", 0) != 0) ++sent;
  }
  CHECK(sent == 1);  // the first; the rest went without a send
  CHECK(f.Metric("replayer_events_dead_lettered_total{reason=\"site_unknown\"}") == 100);
  CHECK(f.Metric("replayer_sites_unknown") == 1);
  CHECK(f.Metric("replayer_events_stored_total") == 100);
  // Never a write fault: not logged, not exported.
  std::string log = Log(f);
  CHECK(log.find("cannot write") == std::string::npos);
  CHECK(log.find("umami does not know website " + unknown) != std::string::npos);
  // replayer_umami_write_fault{process="..."}: 0.
  std::string metrics = f.Metrics();
  size_t gauges = 0;
  for (size_t at = metrics.find("\nreplayer_umami_write_fault{"); at != std::string::npos;
       at = metrics.find("\nreplayer_umami_write_fault{", at + 1)) {
    CHECK(metrics.substr(metrics.find("} ", at) + 2, 2) == "0\n");
    ++gauges;
  }
  CHECK(gauges == 1);  // exported from the start, at 0
  CHECK(f.WaitDrained(10'000));

  // What the operator reads meanwhile: `platformctl streams` over 2 s of good traffic reports the
  // drain rate and, from the replayer's lease (renewed every 5 s), the unknown website.
  nlohmann::json web;
  int round = 0;
  bool told = testsupport::WaitFor(
      [&] {
        dlqtest::CtlRun run;
        std::thread reader([&] {
          run = dlqtest::Ctl(f.stack, "streams --interval 2s --stream WEB_EVENTS --json");
        });
        for (int i = 0; i < 40; ++i) {
          TestEvent e;
          e.site = f.sites[0];
          e.visitor = 100 + i;
          e.id = "r" + std::to_string(round) + "-" + std::to_string(i);
          f.Publish(e);
          // The traffic's pace (over the reader's 2 s interval, so it sees a rate), not a wait.
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        reader.join();
        ++round;
        if (run.rc != 0) return false;
        web = nlohmann::json::parse(run.out)["streams"][0];
        return web.contains("worker_status") &&
               web["worker_status"].value("sites_unknown", 0) == 1 && web["out_rate"].is_number() &&
               web["out_rate"].get<double>() > 0;
      },
      30'000);
  INFO(web.dump());
  CHECK(told);
}

TEST_CASE("30 visitors' validation refusals: dead-lettered within 60 s, no write fault",
          "[integration][umami][replayer]") {
  Fixture f(1, 1);
  f.StartReplayer();
  auto start = std::chrono::steady_clock::now();
  for (int v = 0; v < 30; ++v) {
    TestEvent e;
    e.site = f.sites[0];
    e.visitor = 100 + v;
    e.id = "bad-" + std::to_string(v);
    e.url = "/" + std::string(600, 'u');  // Umami 2.10: 400, url must be at most 500 characters
    f.Publish(e);
  }
  REQUIRE(testsupport::WaitFor([&] { return f.Read("WEB_DLQ").messages == 30; }, 60'000));
  auto took = std::chrono::steady_clock::now() - start;
  INFO("all 30 in WEB_DLQ after "
       << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms");
  CHECK(took < std::chrono::seconds(60));
  for (const auto& d : ReadDlq(f)) {
    CHECK(d.reason == replayer_test::kFailedReason);
    CHECK_THAT(d.detail, Catch::StartsWith("HTTP 400: "));
    CHECK_THAT(d.detail, Catch::Contains("must be at most"));
  }
  std::string log = Log(f);
  CHECK(log.find("cannot write") == std::string::npos);
  CHECK(f.Metric("replayer_write_fault_retries_total") == 0);
  CHECK(f.WaitDrained(10'000));
}
