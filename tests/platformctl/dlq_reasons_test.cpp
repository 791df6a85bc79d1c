// The exporter's tally of a DLQ's messages by reason (platformctl/dlq/reasons.h): which
// sequences it reads at each reading, and the bounded labels.
#include "platformctl/dlq/reasons.h"

#include <catch2/catch.hpp>

#include "common/metrics.h"
#include "platformctl/exporter.h"

using platformctl::DlqReasonTally;

TEST_CASE("dlq reasons: only new sequences are read, at most cap a reading", "[dlq][reasons]") {
  DlqReasonTally t;
  CHECK_FALSE(t.Plan(0, 0, 0, 100));  // empty
  auto r = t.Plan(1, 250, 250, 100);
  REQUIRE(r);
  CHECK((r->from == 1 && r->to == 100));
  for (uint64_t s = 1; s <= 100; ++s) t.Add(s, std::string(s % 2 ? "a: x" : "b: y"));
  t.Walked(100);
  CHECK(t.Unread(250) == 150);
  r = t.Plan(1, 250, 250, 100);
  REQUIRE(r);
  CHECK((r->from == 101 && r->to == 200));
  for (uint64_t s = 101; s <= 200; ++s) t.Add(s, std::nullopt);
  t.Walked(200);
  r = t.Plan(1, 250, 250, 100);
  REQUIRE(r);
  CHECK((r->from == 201 && r->to == 250));
  t.Walked(250);                          // 201..250 erased meanwhile: nothing came
  CHECK_FALSE(t.Plan(1, 250, 200, 100));  // all counted: nothing read again
  CHECK(t.Counts() == std::map<std::string, uint64_t>{{"a", 50}, {"b", 50}, {"none", 100}});
  // The front expired: dropped without reading anything.
  CHECK_FALSE(t.Plan(151, 250, 50, 100));
  CHECK(t.Counts() == std::map<std::string, uint64_t>{{"a", 0}, {"b", 0}, {"none", 50}});
  // Erased in the middle (fewer held than counted): counted again from the front.
  r = t.Plan(151, 250, 10, 100);
  REQUIRE(r);
  CHECK((r->from == 151 && r->to == 250));
  CHECK(t.Unread(10) == 10);
  // New dead letters: only those.
  t.Walked(250);
  r = t.Plan(151, 260, 20, 100);
  REQUIRE(r);
  CHECK((r->from == 251 && r->to == 260));
}

TEST_CASE("dlq reasons: a label is the reason up to its ':' and there are at most 32",
          "[dlq][reasons]") {
  CHECK(DlqReasonTally::Label("database rejected this batch: SQLSTATE 23514: no partition") ==
        "database rejected this batch");
  CHECK(DlqReasonTally::Label("umami failed this event 4 times while its health checks passed") ==
        "umami failed this event 4 times while its health checks passed");
  CHECK(DlqReasonTally::Label("bad\x1b[2Jreason") == "bad?[2Jreason");
  CHECK(DlqReasonTally::Label(std::string(300, 'x')).size() == 64);
  CHECK(DlqReasonTally::Label(": only evidence") == "none");
  DlqReasonTally t;
  REQUIRE(t.Plan(1, 100, 100, 100));
  for (uint64_t s = 1; s <= 100; ++s) t.Add(s, "reason " + std::to_string(s));
  const auto counts = t.Counts();
  CHECK(counts.size() == DlqReasonTally::kMaxReasons + 1);
  CHECK(counts.at("other") == 100 - DlqReasonTally::kMaxReasons);
}

TEST_CASE("dlq reasons: the exporter's gauges", "[dlq][reasons]") {
  common::metrics::Registry r;
  platformctl::StreamGauges g(r);
  g.RecordDlqReasons("WEB_DLQ", {{"umami failed this event 4 times", 3}, {"not valid JSON", 0}}, 7);
  const std::string out = r.Expose();
  CHECK(out.find("jetstream_dlq_messages{reason=\"umami failed this event 4 times\",stream=\"WEB_"
                 "DLQ\"} 3\n") != std::string::npos);
  CHECK(out.find("jetstream_dlq_messages{reason=\"not valid JSON\",stream=\"WEB_DLQ\"} 0\n") !=
        std::string::npos);
  CHECK(out.find("jetstream_dlq_unread_messages{stream=\"WEB_DLQ\"} 7\n") != std::string::npos);
}
