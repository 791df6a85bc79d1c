// The decisions behind platformctl dlq / erase, without NATS: selection, the replay plan, the
// run summary, pacing, the list formats and the erasure match.
#include <catch2/catch.hpp>

#include <sstream>

#include <nlohmann/json.hpp>

#include "common/dead_letter.h"
#include "common/timefmt.h"
#include "platformctl/dlq/list.h"
#include "platformctl/dlq/replay.h"
#include "platformctl/dlq/select.h"
#include "platformctl/erase_match.h"

using namespace platformctl::dlq;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;

namespace {

constexpr int64_t kSec = 1'000'000'000;
const int64_t kT0 = 1'795'000'000LL * kSec;  // 2026-11-18T...

Entry E(uint64_t seq, int64_t t, std::string key, std::string reason) {
  Entry e;
  e.seq = seq;
  e.time_ns = t;
  e.key = std::move(key);
  e.reason = std::move(reason);
  return e;
}

// Builds a Selection::Spec option by option, as the command line would.
struct Spec {
  Selection::Spec s;
  Spec& all() {
    s.all = true;
    return *this;
  }
  Spec& from(std::string v) {
    s.from = std::move(v);
    return *this;
  }
  Spec& to(std::string v) {
    s.to = std::move(v);
    return *this;
  }
  Spec& key(std::string v) {
    s.key = std::move(v);
    return *this;
  }
  Spec& reason(std::string v) {
    s.reason = std::move(v);
    return *this;
  }
  operator Selection::Spec() const { return s; }  // NOLINT: implicit by design
};

Selection Sel(Selection::Spec spec) {
  auto s = Selection::Parse(spec);
  if (!s) FAIL(s.error().message);
  return *s;
}

common::Headers DlqHeaders(const std::string& subject = "web.events.site-a",
                           const std::string& stream = "WEB_EVENTS") {
  return {{"Nats-Msg-Id", "dlq.WEB_EVENTS.7"},  {"Sa-Dlq-Msg-Id", "ev-7"},
          {"Content-Type", "application/json"}, {"Sa-Dlq-Reason", "umami failed"},
          {"Sa-Dlq-Subject", subject},          {"Sa-Dlq-Stream", stream},
          {"Sa-Dlq-Stream-Seq", "7"},           {"Sa-Dlq-Detail", "status 500"}};
}

}  // namespace

TEST_CASE("dlq unit: RFC 3339 times and DLQ sequences parse as bounds", "[dlq]") {
  auto t = ParseRfc3339("2026-11-29T16:10:13Z");
  REQUIRE(t.ok());
  CHECK(*t == 1'795'968'613LL * kSec);
  CHECK(*ParseRfc3339("2026-11-29T16:10:13.25Z") == *t + kSec / 4);
  CHECK(*ParseRfc3339("2026-11-29T18:10:13+02:00") == *t);
  CHECK(*ParseRfc3339("2026-11-29T15:40:13-00:30") == *t);
  CHECK(*ParseRfc3339("2026-11-29 16:10:13z") == *t);
  CHECK(*ParseRfc3339("2026-11-29") == 1'795'910'400LL * kSec);
  CHECK(*ParseRfc3339("2261-12-31T23:59:59-23:59") > *t);
  CHECK(*ParseRfc3339("1678-01-01") < 0);
  for (const char* bad : {"2026-11-29T16:10:13", "2026-02-30", "2026-13-01", "yesterday", "",
                          "2026-11-29T16:10Z", "2026-11-29T16:10:13.Z", "2026-11-29T25:00:00Z",
                          "2026-11-29T16:10:13Zjunk", "2026-11-29T16:10:13+2:00",
                          // beyond 64-bit nanoseconds: signed overflow until 2026-12-07
                          "9999-01-01", "2262-04-12T00:00:00Z", "1677-01-01",
                          "2026-11-29T16:10:13 Z", "2026-11-29T"}) {
    INFO(bad);
    CHECK_FALSE(ParseRfc3339(bad).ok());
  }
  auto b = ParseBound("1200");
  REQUIRE(b.ok());
  CHECK_FALSE(b->is_time);
  CHECK(b->seq == 1200);
  CHECK_FALSE(ParseBound("0").ok());
  CHECK_FALSE(ParseBound("-3").ok());
  CHECK_FALSE(ParseBound("99999999999999999999999").ok());
  b = ParseBound("2026-11-29T16:10:13Z");
  REQUIRE(b.ok());
  CHECK(b->is_time);
  CHECK(b->time_ns == *t);
}

TEST_CASE("dlq unit: a selection combines its options with AND", "[dlq]") {
  CHECK(Sel({}).empty());
  CHECK_FALSE(Sel(Spec().all()).empty());
  auto s = Sel(Spec().from("10").to("20").key("site-a").reason("Health Checks"));
  CHECK_FALSE(s.empty());
  CHECK(s.Matches(E(10, 0, "site-a", "umami failed while its health checks passed")));
  CHECK(s.Matches(E(20, 0, "site-a", "HEALTH CHECKS")));
  CHECK_FALSE(s.Matches(E(9, 0, "site-a", "health checks")));
  CHECK_FALSE(s.Matches(E(21, 0, "site-a", "health checks")));
  CHECK_FALSE(s.Matches(E(15, 0, "site-b", "health checks")));
  CHECK_FALSE(s.Matches(E(15, 0, "site-a", "not valid JSON")));
  CHECK(s.FilterSubject(InfoFor(Queue::kWeb)) == "dlq.web.site-a");
  CHECK(s.StartSeq() == 10);
  CHECK(s.StartTimeNs() == 0);
  CHECK(s.EndSeq(100) == 20);
  CHECK(s.EndSeq(15) == 15);  // the last sequence at start wins when lower
  CHECK(s.Describe() == "--from 10 --to 20 --key site-a --reason 'Health Checks'");

  auto all = Sel(Spec().all());
  CHECK(all.Matches(E(1, 0, "x", "")));
  CHECK(all.FilterSubject(InfoFor(Queue::kApi)) == "dlq.api.*");
  CHECK(all.StartSeq() == 1);
  CHECK(all.EndSeq(77) == 77);

  // Time bounds are inclusive and use the dead-lettering time.
  auto t = Sel(Spec().from("2026-11-29T16:10:13Z").to("2026-11-29T16:10:14Z"));
  int64_t from = *ParseRfc3339("2026-11-29T16:10:13Z");
  CHECK(t.StartTimeNs() == from);
  CHECK(t.StartSeq() == 1);
  CHECK(t.Matches(E(5, from, "k", "")));
  CHECK(t.Matches(E(5, from + kSec, "k", "")));
  CHECK_FALSE(t.Matches(E(5, from - 1, "k", "")));
  CHECK_FALSE(t.Matches(E(5, from + kSec + 1, "k", "")));
  CHECK(t.EndSeq(50) == 50);
  // A sequence and a time may be mixed.
  auto mixed = Sel(Spec().from("2026-11-29T16:10:13Z").to("40"));
  CHECK(mixed.Matches(E(40, from, "k", "")));
  CHECK_FALSE(mixed.Matches(E(41, from, "k", "")));
  CHECK(mixed.EndSeq(100) == 40);
}

TEST_CASE("dlq unit: a selection refuses what cannot select anything sensible", "[dlq]") {
  CHECK_FALSE(Selection::Parse(Spec().from("20").to("10")).ok());
  CHECK_FALSE(Selection::Parse(Spec().from("2026-11-29T10:00:00Z").to("2026-11-29")).ok());
  CHECK_FALSE(Selection::Parse(Spec().from("soon")).ok());
  CHECK_FALSE(Selection::Parse(Spec().key("a.b")).ok());
  CHECK_FALSE(Selection::Parse(Spec().key(">")).ok());
  CHECK_FALSE(Selection::Parse(Spec().key("*")).ok());
  CHECK_FALSE(Selection::Parse(Spec().key("a b")).ok());
  CHECK_FALSE(Selection::Parse(Spec().key("")).ok());
  CHECK_FALSE(Selection::Parse(Spec().reason("")).ok());
  CHECK(Selection::Parse(Spec().from("10").to("10")).ok());
  auto e = Selection::Parse(Spec().to("later"));
  REQUIRE_FALSE(e.ok());
  CHECK_THAT(e.error().message, Catch::StartsWith("--to: 'later' is not a time"));
}

TEST_CASE("dlq unit: an entry comes from the DLQ headers and the subject only", "[dlq]") {
  auto h = DlqHeaders();
  auto q = InfoFor(Queue::kWeb);
  Entry e = MakeEntry(q, 12, kT0, "dlq.web.site-a", 345,
                      [&](const char* name) { return common::FindHeader(h, name); });
  CHECK(e.seq == 12);
  CHECK(e.time_ns == kT0);
  CHECK(e.key == "site-a");
  CHECK(e.stream == "WEB_EVENTS");
  CHECK(e.stream_seq == 7u);
  CHECK(e.subject == "web.events.site-a");
  CHECK(e.size == 345);
  CHECK(e.reason == "umami failed");
  Entry bare = MakeEntry(q, 3, kT0, "dlq.web._invalid", 0,
                         [](const char*) { return std::optional<std::string>("x1"); });
  CHECK(bare.key == "_invalid");
  CHECK_FALSE(bare.stream_seq.has_value());  // "x1" is not a sequence
  CHECK(Printable("a\x1b[2Jb\n") == "a?[2Jb?");
}

TEST_CASE("dlq unit: NATS subject matching follows the wildcard rules", "[dlq]") {
  CHECK(SubjectMatches("web.events.*", "web.events.site-a"));
  CHECK_FALSE(SubjectMatches("web.events.*", "web.events"));
  CHECK_FALSE(SubjectMatches("web.events.*", "web.events.a.b"));
  CHECK_FALSE(SubjectMatches("web.events.*", "web.other.a"));
  CHECK(SubjectMatches("web.>", "web.events.a.b"));
  CHECK_FALSE(SubjectMatches("web.>", "web"));
  CHECK(SubjectMatches("a.b", "a.b"));
  CHECK_FALSE(SubjectMatches("a.b", "a.b.c"));
  CHECK_FALSE(SubjectMatches("web.events.*", "web.events."));
  CHECK_FALSE(SubjectMatches("*.*", "a..b"));
}

TEST_CASE("dlq unit: a replay keeps payload and origin headers and takes the new id", "[dlq]") {
  auto q = InfoFor(Queue::kWeb);
  OriginStream origin{"WEB_EVENTS", {"web.events.*"}};
  auto p = PlanReplay(q, 42, DlqHeaders(), "{\"id\":\"e\"}", origin);
  REQUIRE(p.publish);
  CHECK(p.out.subject == "web.events.site-a");
  CHECK(p.out.data == "{\"id\":\"e\"}");
  CHECK(p.out.msg_id == "ev-7.replay.WEB_DLQ.42");
  CHECK(p.out.expect_stream == "WEB_EVENTS");
  CHECK(p.out.headers ==
        common::Headers{{"Content-Type", "application/json"}, {"Sa-Dlq-Replay", "WEB_DLQ.42"}});
  CHECK(ReplayMsgId("b-1.replay.API_DLQ.5", "API_DLQ", 9) ==
        "b-1.replay.API_DLQ.5.replay.API_DLQ.9");

  // What a message that went through the DLQ twice carries (dead_letter::Build of a replay).
  common::dead_letter::Origin twice;
  twice.subject = "api.metrics.acme";
  twice.stream = "API_METRICS";
  twice.stream_seq = 5;
  twice.payload = "x";
  twice.headers = {{"Nats-Msg-Id", "b-1.replay.API_DLQ.5"}, {"Sa-Dlq-Replay", "API_DLQ.5"}};
  auto dl = common::dead_letter::Build(twice, "cannot decode");
  auto again = PlanReplay(InfoFor(Queue::kApi), 9, dl.headers, "x",
                          OriginStream{"API_METRICS", {"api.metrics.*"}});
  REQUIRE(again.publish);
  CHECK(again.out.msg_id == "b-1.replay.API_DLQ.5.replay.API_DLQ.9");
  CHECK(again.out.headers == common::Headers{{"Sa-Dlq-Replay", "API_DLQ.9"}});
}

TEST_CASE("dlq unit: the original id comes from Sa-Dlq-Msg-Id, a foreign Nats-Msg-Id, the event",
          "[dlq]") {
  auto web = InfoFor(Queue::kWeb);
  auto api = InfoFor(Queue::kApi);
  const std::string event = R"({"id":"ev-payload","website":"s","visitor":"v"})";
  // Ours: Sa-Dlq-Msg-Id wins over everything.
  CHECK(OriginalMsgId(web, DlqHeaders(), event) == "ev-7");
  // The previous system's shape: the four headers, its own Nats-Msg-Id being the origin's.
  common::Headers legacy = {{"Nats-Msg-Id", "ev-legacy"},
                            {"Sa-Dlq-Reason", "r"},
                            {"Sa-Dlq-Subject", "web.events.s"},
                            {"Sa-Dlq-Stream", "WEB_EVENTS"},
                            {"Sa-Dlq-Stream-Seq", "3"}};
  CHECK(OriginalMsgId(web, legacy, event) == "ev-legacy");
  CHECK(OriginalMsgId(api, legacy, "x") == "ev-legacy");
  // Our own dead-lettering id is not the original's: the event id is.
  common::Headers ours_no_orig = {{"Nats-Msg-Id", "dlq.WEB_EVENTS.7"}, {"Sa-Dlq-Stream", "x"}};
  CHECK(OriginalMsgId(web, ours_no_orig, event) == "ev-payload");
  CHECK_FALSE(OriginalMsgId(api, ours_no_orig, event));  // a batch has no id in its body
  // An earlier version replayed id-less messages as ".replay.<dlq>.<seq>": never built on.
  common::Headers replayed_bare = {{"Sa-Dlq-Msg-Id", ".replay.WEB_DLQ.3"},
                                   {"Nats-Msg-Id", "dlq.WEB_EVENTS.9"}};
  CHECK(OriginalMsgId(web, replayed_bare, event) == "ev-payload");
  CHECK_FALSE(OriginalMsgId(web, replayed_bare, R"({"id":".replay.WEB_DLQ.1.replay.X.2"})"));
  CHECK_FALSE(OriginalMsgId(api, replayed_bare, ""));
  // A chain of replays of a real id is kept (the services strip every suffix).
  CHECK(OriginalMsgId(api, {{"Sa-Dlq-Msg-Id", "b-1.replay.API_DLQ.5"}}, "") ==
        "b-1.replay.API_DLQ.5");
  // Values that could not go into a header, or are not ids, pass to the next source.
  CHECK(OriginalMsgId(web, {{"Sa-Dlq-Msg-Id", "a b"}}, event) == "ev-payload");
  CHECK(OriginalMsgId(web, {{"Sa-Dlq-Msg-Id", "a\r\nX: y"}}, event) == "ev-payload");
  CHECK(OriginalMsgId(web, {{"Sa-Dlq-Msg-Id", std::string(257, 'a')}}, event) == "ev-payload");
  CHECK(OriginalMsgId(web, {{"Sa-Dlq-Msg-Id", std::string(256, 'a')}}, event) ==
        std::string(256, 'a'));
  CHECK_FALSE(OriginalMsgId(web, {}, R"({"id":17})"));
  CHECK_FALSE(OriginalMsgId(web, {}, R"({"id":""})"));
  CHECK_FALSE(OriginalMsgId(web, {}, "not json"));
  CHECK_FALSE(OriginalMsgId(web, {}, R"(["id"])"));

  CHECK(common::dead_letter::IsDlqMsgId("dlq.WEB_EVENTS.7"));
  CHECK(common::dead_letter::IsDlqMsgId(common::dead_letter::DlqMsgId("API_METRICS", 123456)));
  CHECK_FALSE(common::dead_letter::IsDlqMsgId("dlq.WEB_EVENTS."));
  CHECK_FALSE(common::dead_letter::IsDlqMsgId("dlq..7"));
  CHECK_FALSE(common::dead_letter::IsDlqMsgId("dlq.WEB_EVENTS.7x"));
  CHECK_FALSE(common::dead_letter::IsDlqMsgId("ev-7"));
  CHECK_FALSE(common::dead_letter::IsDlqMsgId("3f6a1c2e-0000-4000-8000-000000000000"));

  // A replay of a message without any id is skipped with a reason, never published.
  OriginStream origin{"WEB_EVENTS", {"web.events.*"}};
  common::Headers no_id = {{"Sa-Dlq-Subject", "web.events.s"},
                           {"Sa-Dlq-Stream", "WEB_EVENTS"},
                           {"Nats-Msg-Id", "dlq.WEB_EVENTS.4"}};
  auto skipped = PlanReplay(web, 11, no_id, "{}", origin);
  CHECK_FALSE(skipped.publish);
  CHECK_THAT(skipped.skip_why, Catch::Contains("no original message id"));
  auto from_event = PlanReplay(web, 11, no_id, event, origin);
  REQUIRE(from_event.publish);
  CHECK(from_event.out.msg_id == "ev-payload.replay.WEB_DLQ.11");
}

TEST_CASE("dlq unit: a replay is skipped when the origin is unknown or foreign", "[dlq]") {
  auto q = InfoFor(Queue::kWeb);
  OriginStream origin{"WEB_EVENTS", {"web.events.*"}};
  auto foreign = PlanReplay(q, 1, DlqHeaders("web.other.site-a"), "p", origin);
  CHECK_FALSE(foreign.publish);
  CHECK(foreign.skip_why ==
        "origin subject 'web.other.site-a' is not on WEB_EVENTS (subjects web.events.*)");
  auto wrong_stream = PlanReplay(q, 1, DlqHeaders("api.metrics.t", "API_METRICS"), "p", origin);
  CHECK_FALSE(wrong_stream.publish);
  CHECK_THAT(wrong_stream.skip_why, Catch::Contains("'API_METRICS' is not WEB_EVENTS"));
  auto missing = PlanReplay(q, 1, DlqHeaders(), "p", std::nullopt);
  CHECK_FALSE(missing.publish);
  CHECK_THAT(missing.skip_why, Catch::Contains("does not exist"));
  auto no_subject = PlanReplay(q, 1, {{"Sa-Dlq-Stream", "WEB_EVENTS"}}, "p", origin);
  CHECK_FALSE(no_subject.publish);
  CHECK_THAT(no_subject.skip_why, Catch::Contains("no Sa-Dlq-Subject header"));
}

TEST_CASE("dlq unit: the run summary counts outcomes and groups the reasons", "[dlq]") {
  RunSummary s;
  CHECK(s.complete());
  for (uint64_t i = 1; i <= 30; ++i) s.Add(i, Outcome::kReplayed);
  s.Add(31, Outcome::kAlreadyThere);
  for (uint64_t i = 40; i < 55; ++i) s.Add(i, Outcome::kSkipped, "foreign subject");
  s.Add(60, Outcome::kFailed, "timeout");
  CHECK(s.total() == 47);
  CHECK(s.count(Outcome::kReplayed) == 30);
  CHECK_FALSE(s.complete());
  REQUIRE(s.skipped().size() == 1);
  CHECK(s.skipped()[0].count == 15);
  CHECK(s.skipped()[0].seqs.size() == 10);  // the first ten are named
  for (int i = 0; i < 60; ++i) s.Add(100 + i, Outcome::kFailed, "reason " + std::to_string(i));
  CHECK(s.failed().size() == 51);  // 50 distinct reasons, then one "other" group
  CHECK(s.failed().back().count == 11);

  RunSummary ok;
  ok.Add(1, Outcome::kReplayed);
  ok.Add(2, Outcome::kAlreadyThere);
  std::ostringstream text;
  PrintSummaryText(ok, RunKind::kReplay, InfoFor(Queue::kWeb), text);
  CHECK(text.str() ==
        "replayed: 1\nalready there from an earlier run: 1\nskipped (kept in WEB_DLQ): 0\n"
        "failed: 0\n");
  ok.MarkStopped("interrupted (SIGINT/SIGTERM)");
  CHECK_FALSE(ok.complete());
  std::ostringstream json;
  PrintSummaryJson(ok, RunKind::kReplay, InfoFor(Queue::kWeb), "--all", 9, json);
  auto j = nlohmann::json::parse(json.str());
  CHECK(j["replayed"] == 1);
  CHECK(j["already_there"] == 1);
  CHECK(j["stopped"] == "interrupted (SIGINT/SIGTERM)");
  CHECK(j["complete"] == false);
  CHECK(j["end_seq"] == 9);
  CHECK_THAT(ProgressLine(ok, RunKind::kReplay, InfoFor(Queue::kWeb), 5, 10, 2.0),
             Catch::StartsWith("replay WEB_DLQ: 5 of at most 10 looked at, 1 replayed, 1 "
                               "already, 0 skipped, 0 failed, 1/s"));
}

TEST_CASE("dlq unit: the pacer spaces messages and never bursts to catch up", "[dlq]") {
  Pacer none(0);
  CHECK(none.Next(nanoseconds(0)).count() == 0);
  CHECK(none.Next(nanoseconds(5)).count() == 0);
  Pacer p(10);  // one per 100 ms
  CHECK(p.Next(milliseconds(0)) == milliseconds(0));
  CHECK(p.Next(milliseconds(10)) == milliseconds(90));
  CHECK(p.Next(milliseconds(100)) == milliseconds(100));
  // A publish that took a second: the next one goes now, the one after waits a full interval.
  CHECK(p.Next(milliseconds(1500)) == milliseconds(0));
  CHECK(p.Next(milliseconds(1500)) == milliseconds(100));
  CHECK(*ParseRate("200") == 200);
  CHECK(*ParseRate("0.5/s") == 0.5);
  for (const char* bad : {"0", "-1", "fast", "10/m", "", "/s", "1e9", "nan"}) {
    INFO(bad);
    CHECK_FALSE(ParseRate(bad).ok());
  }
}

TEST_CASE("dlq unit: list output has the contract fields (docs/contract.md §9) and aligned columns",
          "[dlq]") {
  auto q = InfoFor(Queue::kWeb);
  Entry a = E(7, kT0, "site-a", "umami failed");
  a.stream = "WEB_EVENTS";
  a.stream_seq = 1234;
  a.subject = "web.events.site-a";
  a.size = 512;
  Entry b = E(12345, kT0 + kSec, "s\x1b", "");
  b.detail = "HTTP 403: Website not found\x1b[2J";
  std::ostringstream text;
  PrintListText({a, b}, q, text);
  std::string out = text.str();
  // The evidence under its row, printable; none under a row without it.
  CHECK_THAT(out, Catch::Contains("\n       detail: HTTP 403: Website not found?[2J\n"));
  CHECK(out.find("detail:") == out.rfind("detail:"));
  CHECK_THAT(out, Catch::StartsWith("  SEQ  DEAD-LETTERED"));
  CHECK_THAT(out, Catch::Contains("    7  " + common::FormatRfc3339(kT0) +
                                  "  site-a  WEB_EVENTS#1234  web.events.site-a   512  "
                                  "umami failed\n"));
  CHECK_THAT(out, Catch::Contains("12345  "));
  CHECK_THAT(out, Catch::Contains("s?    "));  // control byte made printable
  CHECK_THAT(out, Catch::EndsWith("2 messages in WEB_DLQ selected\n"));

  std::ostringstream js;
  PrintListJson({a, b}, q, js);
  auto j = nlohmann::json::parse(js.str());
  REQUIRE(j["messages"].size() == 2);
  const auto& m = j["messages"][0];
  for (const char* f :
       {"seq", "time", "key", "stream", "stream_seq", "subject", "size", "reason", "detail"}) {
    CHECK(m.contains(f));
  }
  CHECK(m["stream_seq"] == 1234);
  CHECK(j["messages"][1]["stream_seq"].is_null());

  ListSummary s;
  s.Add(a);
  s.Add(b);
  s.Add(E(20000, kT0 + 2 * kSec, "site-a", "umami failed"));
  std::ostringstream st;
  s.PrintText(q, st, 1);
  CHECK_THAT(st.str(), Catch::StartsWith("WEB_DLQ: 3 messages selected, 512 payload bytes, seq "
                                         "7..20000"));
  CHECK_THAT(st.str(), Catch::Contains("        2  umami failed\n"));
  CHECK_THAT(st.str(), Catch::Contains("        1  ?\n"));  // an empty reason
  CHECK_THAT(st.str(), Catch::Contains("(1 more sites; --json lists all)"));
  std::ostringstream sj;
  s.PrintJson(q, sj);
  auto k = nlohmann::json::parse(sj.str());
  CHECK(k["count"] == 3);
  CHECK(k["by_key"][0] == nlohmann::json({{"key", "site-a"}, {"count", 2}}));
}

TEST_CASE("dlq unit: erasure matches by site key, website, visitor and tenant", "[dlq]") {
  using platformctl::erase::Match;
  using platformctl::erase::Matches;
  using platformctl::erase::Request;
  const std::string ev_x_v1 = R"({"website":"site-x","visitor":"v1"})";
  const std::string ev_x_v2 = R"({"website":"site-x","visitor":"v2"})";
  Request site{"site-x", std::nullopt, ""};
  CHECK(Matches(site, "site-x", "not json at all") == Match::kYes);
  CHECK(Matches(site, "_invalid", ev_x_v1) == Match::kYes);
  CHECK(Matches(site, "site-y", R"({"website":"site-y"})") == Match::kNo);
  CHECK(Matches(site, "site-y", "garbage") == Match::kNo);
  Request visitor{"site-x", "v1", ""};
  CHECK(Matches(visitor, "site-x", ev_x_v1) == Match::kYes);
  CHECK(Matches(visitor, "site-x", ev_x_v2) == Match::kNo);
  CHECK(Matches(visitor, "_invalid", ev_x_v1) == Match::kYes);
  CHECK(Matches(visitor, "site-y", R"({"website":"site-y","visitor":"v1"})") == Match::kNo);
  CHECK(Matches(visitor, "site-x", "{broken") == Match::kUnreadable);
  CHECK(Matches(visitor, "site-x", R"({"website":"site-x","visitor":1})") == Match::kNo);
  CHECK(Matches(visitor, "site-y", "{broken") == Match::kNo);
  Request tenant{"", std::nullopt, "t1"};
  CHECK(Matches(tenant, "t1", "anything") == Match::kYes);
  CHECK(Matches(tenant, "t2", "anything") == Match::kNo);
}
