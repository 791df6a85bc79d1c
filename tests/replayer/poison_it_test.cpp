// Poison against a real Umami: dead-lettered after 4 failed sends with the exact reason, the
// visitor's excess behind it capped, other visitors never waiting, malformed input at once.
#include <nats/nats.h>

#include <catch2/catch.hpp>
#include <chrono>

#include "common/dead_letter.h"
#include "tests/replayer/fixture.h"

using replayer_test::Fixture;
using testsupport::TestEvent;

namespace {
const std::string kOverflow =
    "more than 64 events of this visitor were held behind an event umami keeps failing";

size_t Count(const std::vector<std::string>& v, const std::string& s) {
  return static_cast<size_t>(std::count(v.begin(), v.end(), s));
}
}  // namespace

TEST_CASE("poison is dead-lettered with its reason and nobody else waits",
          "[integration][umami][replayer]") {
  Fixture f(1, 2);
  f.StartReplayer();
  const std::string site = f.sites[0];
  auto ev = [&](int visitor, int seq) {
    TestEvent e;
    e.site = site;
    e.visitor = visitor;
    e.seq = seq;
    e.id = "p-" + std::to_string(visitor) + "-" + std::to_string(seq);
    return e;
  };
  // Visitor 1000: a url longer than Umami 2.10 accepts, then 70 more events behind it.
  auto head = ev(1000, 0);
  head.url = "/" + std::string(600, 'u');
  f.Publish(head);
  for (int i = 1; i <= 70; ++i) f.Publish(ev(1000, i));
  // Visitor 1001: a number beyond numeric(19,4) in event data: Umami would store the event row
  // and then fail (500), so it is poison at once, never sent (docs/replayer.md).
  auto big = ev(1001, 0);
  big.data_json = R"({"n":1e21})";
  f.Publish(big);
  // Visitor 1002: identify (500 on Umami 2.10).
  auto identify = ev(1002, 0);
  identify.type = "identify";
  f.Publish(identify);
  // Malformed messages: dead-lettered at once.
  REQUIRE(testsupport::PublishRaw(*f.client, "web.events." + site, "not json", "m1").ok());
  REQUIRE(testsupport::PublishRaw(
              *f.client, "web.events." + site,
              R"({"id":"m2","visitor":"v","type":"event","accepted_at":1,"payload":{}})", "m2")
              .ok());
  REQUIRE(testsupport::PublishRaw(
              *f.client, "web.events." + site,
              R"({"id":"m3","website":"w","type":"event","accepted_at":1,"payload":{}})", "m3")
              .ok());
  REQUIRE(
      testsupport::PublishRaw(
          *f.client, "web.events." + site,
          R"({"id":"m4","website":"w","visitor":"v","type":"click","accepted_at":1,"payload":{}})",
          "m4")
          .ok());
  // 20 other visitors, 10 events each, published after all of that.
  auto published_others = std::chrono::steady_clock::now();
  for (int v = 0; v < 20; ++v) {
    for (int i = 0; i < 10; ++i) f.Publish(ev(v, i));
  }
  // They flow while the poison waits: all stored well before the poison's 4th failure (~36 s).
  REQUIRE(testsupport::WaitFor(
      [&] { return f.StoredEvents("url_path LIKE '/v1_/%' OR url_path ~ '^/v[0-9]/'") == 200; },
      30'000));
  auto others_took = std::chrono::steady_clock::now() - published_others;
  CHECK(others_took < std::chrono::seconds(30));
  // The cap applies from the head's second counted failure (~4 s after its first): then the
  // newest 6 of the 70 behind it go, well before its fourth failure (~36 s).
  CHECK(testsupport::WaitFor([&] { return Count(f.DlqReasons(), kOverflow) == 6; }, 25'000));
  {
    auto reasons = f.DlqReasons();
    CHECK(Count(reasons, replayer_test::kFailedReason) ==
          0);  // nothing dead-lettered for failures yet
    CHECK(std::count_if(reasons.begin(), reasons.end(), [](const std::string& r) {
            return r.rfind("the event is not valid JSON", 0) == 0;
          }) == 1);
    CHECK(Count(reasons, "the event has no website id") == 1);
    CHECK(Count(reasons, "the event has no usable visitor key") == 1);
    CHECK(Count(reasons, "the event type 'click' is not event or identify") == 1);
    CHECK(std::count_if(reasons.begin(), reasons.end(), [](const std::string& r) {
            return r.rfind("the event's data field 'n' holds 1e+21", 0) == 0;
          }) == 1);
    CHECK(Count(reasons, kOverflow) == 6);
  }
  REQUIRE(f.WaitDrained(90'000));
  auto reasons = f.DlqReasons();
  INFO([&] {
    std::string all;
    for (const auto& r : reasons) all += r + "\n";
    return all;
  }());
  CHECK(Count(reasons, replayer_test::kFailedReason) == 2);  // the long url, identify
  CHECK(Count(reasons, kOverflow) == 6);
  CHECK(reasons.size() == 2 + 6 + 5);
  // The poison visitor's 64 kept events were stored, in order, after the head went.
  auto rows = testsupport::Query(
      f.UmamiDb(),
      "SELECT url_path FROM website_event WHERE url_path LIKE '/v1000/%' ORDER BY "
      "created_at");
  REQUIRE(rows.size() == 64);
  for (int i = 0; i < 64; ++i) CHECK(rows[i] == "/v1000/" + std::to_string(i + 1));
  CHECK(f.Metric("replayer_events_dead_lettered_total{reason=\"failed_4_times\"}") == 2);
  CHECK(f.Metric("replayer_events_dead_lettered_total{reason=\"visitor_overflow\"}") == 6);
  CHECK(f.Metric("replayer_events_dead_lettered_total{reason=\"poison\"}") == 5);

  // The DLQ copy: payload unchanged, origin in the headers, Umami's answer as detail.
  auto web = f.Read("WEB_DLQ");
  bool found_long_url = false;
  for (uint64_t seq = web.first_seq; seq <= web.last_seq; ++seq) {
    natsMsg* m = nullptr;
    REQUIRE(js_GetMsg(&m, f.client->js(), "WEB_DLQ", seq, nullptr, nullptr) == NATS_OK);
    const char* reason = nullptr;
    const char* subject = nullptr;
    const char* stream = nullptr;
    const char* oseq = nullptr;
    const char* detail = nullptr;
    natsMsgHeader_Get(m, common::dead_letter::kReason, &reason);
    natsMsgHeader_Get(m, common::dead_letter::kSubject, &subject);
    natsMsgHeader_Get(m, common::dead_letter::kStream, &stream);
    natsMsgHeader_Get(m, common::dead_letter::kStreamSeq, &oseq);
    natsMsgHeader_Get(m, common::dead_letter::kDetail, &detail);
    CHECK(std::string(natsMsg_GetSubject(m)) == "dlq.web." + site);
    CHECK(std::string(subject) == "web.events." + site);
    CHECK(std::string(stream) == "WEB_EVENTS");
    CHECK(std::stoull(oseq) > 0);
    std::string data(natsMsg_GetData(m), natsMsg_GetDataLength(m));
    if (data.find(std::string(600, 'u')) != std::string::npos) {
      found_long_url = true;
      CHECK(std::string(reason) == replayer_test::kFailedReason);
      REQUIRE(detail != nullptr);
      CHECK_THAT(std::string(detail), Catch::StartsWith("HTTP 400"));
    }
    natsMsg_Destroy(m);
  }
  CHECK(found_long_url);
}

TEST_CASE("WEB_DLQ gone for a while: dead-letters wait unacked, others flow, each lands once",
          "[integration][umami][replayer]") {
  Fixture f(1, 2);
  f.StartReplayer();
  REQUIRE(js_DeleteStream(f.client->js(), "WEB_DLQ", nullptr, nullptr) == NATS_OK);
  const std::string site = f.sites[0];
  auto ev = [&](int visitor, int seq) {
    TestEvent e;
    e.site = site;
    e.visitor = visitor;
    e.seq = seq;
    e.id = "g-" + std::to_string(visitor) + "-" + std::to_string(seq);
    return e;
  };
  // A poison head with 70 events behind it: 6 of them overflow at its first counted failure.
  auto head = ev(1000, 0);
  head.url = "/" + std::string(600, 'u');
  f.Publish(head);
  for (int i = 1; i <= 70; ++i) f.Publish(ev(1000, i));
  for (int v = 0; v < 20; ++v) {
    for (int i = 0; i < 10; ++i) f.Publish(ev(v, i));
  }
  // The dead-letters fail while the stream is gone, and the engine goes on meanwhile.
  REQUIRE(testsupport::WaitFor(
      [&] {
        return testsupport::Capture("cat " + f.log_path).find("could not move seq") !=
               std::string::npos;
      },
      30'000));
  REQUIRE(testsupport::WaitFor(
      [&] {
        return f.StoredEvents("url_path ~ '^/v[0-9]+/' AND url_path NOT LIKE '/v1000/%'") == 200;
      },
      30'000));
  CHECK(f.Metric("replayer_events_dead_lettered_total{reason=\"visitor_overflow\"}") == 0);
  // Nothing acked without its copy: the overflow and the rest of the visitor are still there.
  CHECK(f.Read("WEB_EVENTS").messages >= 71);

  int rc = -1;
  std::string out =
      testsupport::Capture("NATS_URL=" + f.stack.Env("NATS_URL") + " " + testsupport::BinaryDir() +
                               "/platformctl/platformctl init 2>&1",
                           &rc);
  REQUIRE(rc == 0);
  REQUIRE(f.WaitDrained(120'000));
  auto reasons = f.DlqReasons();
  CHECK(Count(reasons, kOverflow) == 6);
  CHECK(Count(reasons, replayer_test::kFailedReason) == 1);
  CHECK(reasons.size() == 7);  // one copy each, retries or not
  CHECK(f.StoredEvents("url_path LIKE '/v1000/%'") == 64);
}
