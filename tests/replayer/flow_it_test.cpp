// The replayer against a real Umami: stored once, in order, sessions as Umami derives them.
#include <catch2/catch.hpp>
#include <map>

#include "tests/replayer/fixture.h"

using replayer_test::Fixture;
using testsupport::TestEvent;

TEST_CASE("5,000 events from 200 visitors over 2 sites: each stored once, in order",
          "[integration][umami][replayer]") {
  Fixture f(1, 2);
  constexpr int kVisitors = 200;
  constexpr int kEvents = 5000;
  std::map<int, int> next_seq;
  f.StartReplayer();
  for (int i = 0; i < kEvents; ++i) {
    TestEvent e;
    e.visitor = i % kVisitors;
    e.site = f.sites[e.visitor % 2];
    e.seq = next_seq[e.visitor]++;
    e.id = "ev-" + std::to_string(i);
    f.Publish(e);
  }
  REQUIRE(f.WaitDrained(180'000));

  CHECK(f.StoredEvents() == kEvents);
  // Exactly once: no event name/url twice.
  CHECK(testsupport::QueryInt(f.UmamiDb(),
                              "SELECT count(*) FROM (SELECT url_path FROM website_event GROUP BY "
                              "url_path HAVING count(*) > 1) d") == 0);
  // Per visitor, Umami's insertion order is the stream order.
  auto rows = testsupport::Query(
      f.UmamiDb(), "SELECT url_path FROM website_event ORDER BY created_at, event_id");
  REQUIRE(rows.size() == kEvents);
  std::map<int, int> last;
  int out_of_order = 0;
  for (const auto& path : rows) {  // /v<visitor>/<seq>
    auto slash = path.find('/', 2);
    int v = std::stoi(path.substr(2, slash - 2));
    int seq = std::stoi(path.substr(slash + 1));
    if (last.count(v) && seq != last[v] + 1) ++out_of_order;
    last[v] = seq;
  }
  CHECK(out_of_order == 0);
  // One session per visitor (distinct IP and agent each), each on its own site.
  CHECK(testsupport::QueryInt(f.UmamiDb(), "SELECT count(*) FROM session") == kVisitors);
  CHECK(testsupport::QueryInt(f.UmamiDb(), "SELECT count(*) FROM event_data") == kEvents);
  CHECK(f.DlqReasons().empty());
  CHECK(f.Metric("replayer_events_stored_total") == kEvents);
  CHECK(f.Metric("replayer_events_dropped_by_umami_total") == 0);
  CHECK(f.StopReplayer(35'000) == 0);
}
