// The engine core and the answers that are not about the database: a website Umami does not
// hold (dead-lettered at the first answer, the site's next events unsent until a recheck), and
// Umami's validation refusals (never a write fault). docs/replayer.md, "What an answer is about".
#include <catch2/catch.hpp>
#include <cstdio>
#include <string>

#include "replayer/classifier.h"
#include "replayer/engine_core.h"
#include "tests/replayer/core_driver.h"

using namespace replayer;
using namespace core_test;
using std::chrono::milliseconds;
using std::chrono::seconds;

namespace {

const char* kUnknownSite = "99999999-0000-4000-8000-00000000dead";
const char* kNotFound = "Website not found: 99999999-0000-4000-8000-00000000dead.";

std::string SiteBody(const std::string& site, const std::string& id, const std::string& visitor) {
  std::string b = Body(id, visitor, 1000);
  b.replace(b.find(kSite), std::string(kSite).size(), site);
  return b;
}

// A running core answered "Website not found" for kUnknownSite's first event, its dead
// letter stored.
void BlockSite(Driver& d) {
  d.Up();
  d.Fetched({d.Msg(1, SiteBody(kUnknownSite, "x1", "v1"))});
  d.Visit();
  d.Answer(d.One<SendCmd>(), 403, kNotFound);
  d.core.OnPublished(d.One<DeadLetterCmd>().pub_id, {}, d.now);
  d.Take();
}

void AnswerVisits(Driver& d) {
  for (const auto& v : d.All<VisitLookupCmd>()) {
    d.core.OnVisitAnswer(v.lane, Lookup::kAbsent, "", d.now);
  }
  d.Take();
}

}  // namespace

TEST_CASE("core: a site Umami does not know goes to WEB_DLQ at its first answer, then unsent",
          "[core][site]") {
  Driver d;
  d.Up();
  d.Fetched({d.Msg(1, SiteBody(kUnknownSite, "x1", "v1")), d.Msg(2, Body("g1", "g", 1000))});
  AnswerVisits(d);
  auto sends = d.All<SendCmd>();
  REQUIRE(sends.size() == 2);
  d.Answer(sends[0], 403, kNotFound);
  // The answer is about the site: no health check, no retry, the event to WEB_DLQ at once.
  CHECK(d.All<CheckCmd>().empty());
  auto dl = d.One<DeadLetterCmd>();
  CHECK(dl.code == "site_unknown");
  CHECK_THAT(dl.reason, Catch::Contains(kUnknownSite));
  CHECK_THAT(dl.detail, Catch::Contains("HTTP 403: Website not found"));
  CHECK(d.Noted(Note::Kind::kSiteUnknown));
  CHECK(d.core.sites_unknown() == 1);
  d.core.OnPublished(dl.pub_id, {}, d.now);
  d.Take();
  CHECK(d.One<AckCmd>().why == AckWhy::kDeadLettered);
  // The other site's event is not held up.
  d.Answer(sends[1], 200, kToken);
  CHECK(d.Noted(Note::Kind::kStored));

  // The site's next events (the same visitor's and another's) follow without a send.
  d.Later(seconds(10));
  d.Fetched(
      {d.Msg(3, SiteBody(kUnknownSite, "x2", "v1")), d.Msg(4, SiteBody(kUnknownSite, "x3", "v2"))});
  auto unsent = d.All<DeadLetterCmd>();  // v1's visit is known: its event goes at once
  CHECK(d.All<SendCmd>().empty());
  AnswerVisits(d);
  CHECK(d.All<SendCmd>().empty());
  for (const auto& u : d.All<DeadLetterCmd>()) unsent.push_back(u);
  REQUIRE(unsent.size() == 2);
  for (const auto& u : unsent) {
    CHECK(u.code == "site_unknown");
    CHECK_THAT(u.detail, Catch::StartsWith("not sent: umami answered a send of this website 10 s"));
    CHECK_THAT(u.detail, Catch::Contains("HTTP 403: Website not found"));
  }
  CHECK_FALSE(d.core.ProcessWriteFault(0));
  CHECK(d.core.SelfCheck().empty());
}

TEST_CASE("core: after the recheck time one event of the site is sent, the others wait for it",
          "[core][site]") {
  Driver d;
  BlockSite(d);
  d.Later(kSiteRecheck);
  d.Fetched(
      {d.Msg(2, SiteBody(kUnknownSite, "x2", "v2")), d.Msg(3, SiteBody(kUnknownSite, "x3", "v3"))});
  AnswerVisits(d);
  auto probe = d.One<SendCmd>();  // one goes; the other waits for its answer
  CHECK(d.All<DeadLetterCmd>().empty());
  CHECK(d.core.SelfCheck().empty());

  SECTION("Umami holds the site now: stored, and the waiting event is sent") {
    d.Answer(probe, 200, kToken);
    CHECK(d.Noted(Note::Kind::kSiteKnown));
    CHECK(d.core.sites_unknown() == 0);
    auto next = d.One<SendCmd>();
    CHECK(next.stream_seq != probe.stream_seq);
  }
  SECTION("still unknown: both to WEB_DLQ, the waiting one unsent, and 5 more minutes") {
    d.Answer(probe, 403, kNotFound);
    auto dls = d.All<DeadLetterCmd>();
    REQUIRE(dls.size() == 2);
    CHECK(d.All<SendCmd>().empty());
    CHECK(d.core.sites_unknown() == 1);
    d.Later(kSiteRecheck - seconds(1));
    d.Fetched({d.Msg(4, SiteBody(kUnknownSite, "x4", "v4"))});
    d.Visit();
    CHECK(d.All<SendCmd>().empty());
    CHECK(d.One<DeadLetterCmd>().code == "site_unknown");
  }
  SECTION("the probe's send fails for another cause: the event is retried as usual") {
    d.Answer(probe, 500, "Internal Server Error");
    d.Pass(d.One<CheckCmd>().check_id);
    CHECK(d.All<DeadLetterCmd>().empty());
    CHECK(d.All<SendCmd>().empty());  // the other still waits for the probe's outcome
    d.Later(RetryDelay(1));
    d.Answer(d.One<SendCmd>(), 200, kToken);
    CHECK(d.Noted(Note::Kind::kSiteKnown));
    CHECK(d.One<SendCmd>().stream_seq != probe.stream_seq);
  }
  CHECK(d.core.SelfCheck().empty());
}

TEST_CASE("core: a replayed event of an unknown site is sent at once", "[core][site]") {
  Driver d;
  BlockSite(d);
  d.Later(seconds(30));
  Delivery replay = d.Msg(2, SiteBody(kUnknownSite, "x1", "v1"));
  replay.replayed = true;  // the operator registered the site and replays its dead letters
  d.Fetched({std::move(replay)});
  d.core.OnGuardAnswer(d.One<GuardLookupCmd>().lookup_id, Lookup::kAbsent, d.now);
  d.Take();
  if (!d.All<VisitLookupCmd>().empty()) d.Visit();
  auto s = d.One<SendCmd>();
  d.Answer(s, 200, kToken);
  CHECK(d.Noted(Note::Kind::kSiteKnown));
  CHECK(d.core.sites_unknown() == 0);
}

TEST_CASE("core: validation refusals of 3 visitors are no write fault, each dead-lettered at 4",
          "[core][site]") {
  Driver d;
  d.Up();
  std::vector<Delivery> batch;
  for (int i = 0; i < 3; ++i) {
    batch.push_back(d.Msg(i + 1, Body("n" + std::to_string(i), "v" + std::to_string(i), 1000)));
  }
  d.Fetched(std::move(batch));
  AnswerVisits(d);
  auto sends = d.All<SendCmd>();
  REQUIRE(sends.size() == 3);
  int dead = 0;
  for (int round = 0; round < 4; ++round) {
    d.now += milliseconds(5);
    for (const auto& s : sends) {
      d.core.OnSendAnswer(s.send_id, {400, "payload.name must be at most 50 characters", "", 0},
                          d.now);
    }
    d.Take();
    d.Pass(d.One<CheckCmd>().check_id);
    CHECK_FALSE(d.core.ProcessWriteFault(0));
    CHECK_FALSE(d.Noted(Note::Kind::kWriteFaultBegan));
    dead += static_cast<int>(d.All<DeadLetterCmd>().size());
    if (round == 3) break;
    d.Later(RetryDelay(round + 1));
    sends = d.All<SendCmd>();
    REQUIRE(sends.size() == 3);
  }
  CHECK(dead == 3);
  for (const auto& dl : d.All<DeadLetterCmd>()) CHECK(dl.reason == kFailedReason);
}

TEST_CASE("core: past kMaxSiteBlocks unknown sites each event is sent and dead-lettered itself",
          "[core][site]") {
  Driver d;
  d.Up();
  auto site = [](size_t i) {
    char id[40];
    std::snprintf(id, sizeof id, "99999999-0000-4000-8000-%012zu", i);
    return std::string(id);
  };
  // Each unknown site answered once, its visitor's event dead-lettered and acked.
  auto reject = [&](uint64_t seq, const std::string& s) {
    d.Fetched({d.Msg(seq, SiteBody(s, "e" + std::to_string(seq), "v" + std::to_string(seq)))});
    AnswerVisits(d);
    d.Answer(d.One<SendCmd>(), 403, "Website not found: " + s + ".");
    auto dl = d.One<DeadLetterCmd>();
    REQUIRE(dl.code == "site_unknown");
    d.core.OnPublished(dl.pub_id, {}, d.now);
    d.Take();
  };
  uint64_t seq = 0;
  for (size_t i = 0; i < kMaxSiteBlocks; ++i) reject(++seq, site(i));
  CHECK(d.core.sites_unknown() == kMaxSiteBlocks);
  // One more site: dead-lettered at its answer as well, but not remembered, so its next event
  // is sent (and dead-lettered at its own answer) instead of following unsent.
  reject(++seq, site(kMaxSiteBlocks));
  CHECK(d.core.sites_unknown() == kMaxSiteBlocks);
  reject(++seq, site(kMaxSiteBlocks));
  // A remembered site still follows unsent.
  d.Fetched({d.Msg(++seq, SiteBody(site(0), "again", "v-again"))});
  AnswerVisits(d);
  CHECK(d.All<SendCmd>().empty());
  CHECK(d.One<DeadLetterCmd>().code == "site_unknown");
}
