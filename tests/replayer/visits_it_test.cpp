// Visits as live traffic makes them, shown at the wire: a recording proxy between the replayer
// and a real Umami 2.10 shows which sends carried the visitor's cache token.
#include <catch2/catch.hpp>

#include "tests/replayer/fixture.h"
#include "tests/support/recording_proxy.h"

using replayer_test::Fixture;
using testsupport::TestEvent;

TEST_CASE("no cache token across 30 minutes of the visitor's accepted_at, at the wire",
          "[integration][umami][replayer]") {
  Fixture f(1, 1);
  testsupport::RecordingProxy proxy(f.stack.Env("UMAMI_URLS"));
  // The visitor's events as a drained backlog brings them: hours of its traffic at once.
  const int64_t t0 = 1'764'000'000'000;
  const int64_t minute = 60'000;
  const std::vector<int64_t> times = {t0,
                                      t0 + 10 * minute,
                                      t0 + 29 * minute,
                                      t0 + 3 * 60 * minute,
                                      t0 + 3 * 60 * minute + 5 * minute,
                                      t0 + 3 * 60 * minute + 40 * minute};
  // Sent with a token: continues the visit begun at most 30 minutes before, in event time.
  const std::vector<bool> with_token = {false, true, true, false, true, false};
  for (size_t i = 0; i < times.size(); ++i) {
    TestEvent e;
    e.site = f.sites[0];
    e.visitor = 7;
    e.seq = static_cast<int>(i);
    e.id = "visit-" + std::to_string(i);
    e.url = "/visit/" + std::to_string(i);
    REQUIRE(testsupport::PublishRaw(*f.client, "web.events." + e.site,
                                    testsupport::EventJson(e, times[i]), e.id));
  }
  f.StartReplayer({{"UMAMI_URLS", proxy.url()}});
  REQUIRE(f.WaitDrained(60'000));
  std::vector<testsupport::RecordedRequest> sends;
  for (const auto& r : proxy.Requests()) {
    if (r.path == "/api/send" && r.body.find("/visit/") != std::string::npos) sends.push_back(r);
  }
  REQUIRE(sends.size() == times.size());
  for (size_t i = 0; i < sends.size(); ++i) {
    INFO("send " << i << ": " << sends[i].body.substr(0, 120));
    CHECK(sends[i].body.find("/visit/" + std::to_string(i)) != std::string::npos);  // in order
    CHECK(sends[i].status == 200);
    CHECK(sends[i].cache_token.empty() == !with_token[i]);
  }
  // Umami 2.10 has no /api/batch: the first batch (events 1 and 2, in one visit) was answered
  // 404, and those events then went one by one, as above; no other batch within 10 minutes.
  int batches = 0;
  for (const auto& r : proxy.Requests()) {
    if (r.path != "/api/batch") continue;
    ++batches;
    CHECK(r.status == 404);
    CHECK(r.body.find("/visit/1") != std::string::npos);
    CHECK(r.body.find("/visit/2") != std::string::npos);
  }
  CHECK(batches == 1);
  CHECK(f.Metric("replayer_umami_batch_route{process=\"" + proxy.url() + "\"}") == 0);
  CHECK(f.DlqReasons().empty());
  CHECK(f.StoredEvents("url_path LIKE '/visit/%'") == static_cast<int64_t>(times.size()));
}
