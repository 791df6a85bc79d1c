#include "common/lease.h"

#include <catch2/catch.hpp>
#include <set>
#include <string>
#include <vector>

#include "common/js_reach.h"
#include "common/stop_signal.h"

using common::LeaseDecision;
using namespace std::chrono_literals;

namespace {
using Op = LeaseDecision::Op;
using Change = LeaseDecision::Change;
const common::LeaseClock::time_point t0 = common::LeaseClock::time_point{} + 1000s;
}  // namespace

TEST_CASE("lease timing follows the bucket TTL", "[lease]") {
  auto t = common::LeaseTiming::ForTtl(15s);
  CHECK(t.ttl == 15s);
  CHECK(t.renew_every == 5s);
  CHECK(t.margin == 3s);
  CHECK(t.poll == 1s);
  CHECK(common::LeaseTiming::ForTtl(2s).poll == 200ms);
}

TEST_CASE("a follower creates the lease and then renews it on its revision", "[lease]") {
  LeaseDecision d(common::LeaseTiming::ForTtl(15s));
  auto a = d.Next(t0);
  REQUIRE(a.op == Op::kCreate);
  CHECK_FALSE(d.Leads(t0));
  d.OnCreated(t0, 7);
  CHECK(d.TakeChange() == Change::kGained);
  CHECK(d.TakeChange() == Change::kNone);
  CHECK(d.Leads(t0 + 11s));
  CHECK_FALSE(d.Leads(t0 + 12s));  // TTL minus margin, from the send time
  CHECK(d.Next(t0 + 4s).op == Op::kNone);
  a = d.Next(t0 + 5s);
  REQUIRE(a.op == Op::kRenew);
  CHECK(a.revision == 7);
  d.OnRenewed(t0 + 5s, 9);
  CHECK(d.Leads(t0 + 16s));
  CHECK(d.Next(t0 + 10s).revision == 9);
}

TEST_CASE("a refused create is retried after the poll interval", "[lease]") {
  LeaseDecision d(common::LeaseTiming::ForTtl(15s));
  REQUIRE(d.Next(t0).op == Op::kCreate);
  d.OnCreateRefused(t0);
  CHECK(d.Next(t0 + 500ms).op == Op::kNone);
  CHECK(d.Next(t0 + 1s).op == Op::kCreate);
  CHECK(d.TakeChange() == Change::kNone);
}

TEST_CASE("the first failed renewal ends leadership at once", "[lease]") {
  LeaseDecision d(common::LeaseTiming::ForTtl(15s));
  d.Next(t0);
  d.OnCreated(t0, 1);
  d.TakeChange();
  REQUIRE(d.Next(t0 + 5s).op == Op::kRenew);
  d.OnRenewFailed(t0 + 5s);
  CHECK(d.TakeChange() == Change::kLost);
  CHECK_FALSE(d.Leads(t0 + 5s));
  CHECK(d.Next(t0 + 6s).op == Op::kCreate);  // a follower again
}

TEST_CASE("a leader paused past its deadline stops leading without any reply", "[lease]") {
  LeaseDecision d(common::LeaseTiming::ForTtl(15s));
  d.Next(t0);
  d.OnCreated(t0, 1);
  d.TakeChange();
  // No renewal happened (the process was stopped): validity ends on the local clock alone.
  CHECK_FALSE(d.Leads(t0 + 30s));
  auto a = d.Next(t0 + 30s);
  CHECK(d.TakeChange() == Change::kLost);
  CHECK(a.op == Op::kCreate);
  // A renewal sent before the pause but answered after it does not revive the lease.
  d.OnRenewed(t0 + 4s, 5);
  CHECK_FALSE(d.leader());
}

TEST_CASE("a renewal sent after the deadline does not extend it", "[lease]") {
  LeaseDecision d(common::LeaseTiming::ForTtl(15s));
  d.Next(t0);
  d.OnCreated(t0, 1);
  d.OnRenewed(t0 + 13s, 2);  // sent after t0 + 12 s
  CHECK_FALSE(d.Leads(t0 + 13s));
}

TEST_CASE("resigning ends leadership and reports it", "[lease]") {
  LeaseDecision d(common::LeaseTiming::ForTtl(15s));
  d.Next(t0);
  d.OnCreated(t0, 1);
  d.TakeChange();
  d.Resign();
  CHECK(d.TakeChange() == Change::kLost);
  CHECK_FALSE(d.Leads(t0));
}

TEST_CASE("the lease holder record round-trips and rejects other values", "[lease]") {
  common::LeaseHolder h{"core-1", "node-a", 4242, 1764427800123, 1764427900456, {}};
  auto back = common::LeaseHolder::FromJson(h.ToJson());
  REQUIRE(back);
  CHECK(back->instance == "core-1");
  CHECK(back->host == "node-a");
  CHECK(back->pid == 4242);
  CHECK(back->started_unix_ms == 1764427800123);
  CHECK(back->acquired_unix_ms == 1764427900456);
  CHECK(h.Describe() == "core-1 (node-a, pid 4242)");
  CHECK_FALSE(common::LeaseHolder::FromJson("not json"));
  CHECK_FALSE(common::LeaseHolder::FromJson("{\"instance\":\"x\"}"));
  CHECK_FALSE(common::LeaseHolder::FromJson("[1,2]"));
}

TEST_CASE("a term flag stops with its parent, its own request or its deadline", "[stop]") {
  common::StopFlag parent;
  common::StopFlag term(&parent);
  CHECK_FALSE(term.stopping());
  CHECK_FALSE(term.WaitFor(20ms));
  parent.Request();
  CHECK(term.stopping());
  CHECK(term.WaitFor(1s));

  common::StopFlag own;
  own.Request();
  CHECK(own.stopping());

  common::StopFlag timed;
  timed.ExtendDeadline(std::chrono::steady_clock::now() + 50ms);
  CHECK_FALSE(timed.stopping());
  auto start = std::chrono::steady_clock::now();
  CHECK(timed.WaitFor(5s));
  CHECK(std::chrono::steady_clock::now() - start < 2s);
  timed.ExtendDeadline(std::chrono::steady_clock::now() + 1h);
  CHECK_FALSE(timed.stopping());
}

TEST_CASE("a lost lease expires the term, a request only stops it", "[stop]") {
  common::StopFlag lost;
  lost.ExtendDeadline(std::chrono::steady_clock::now() + 1h);
  CHECK_FALSE(lost.expired());
  lost.Expire();
  CHECK(lost.stopping());
  CHECK(lost.expired());

  common::StopFlag requested;
  requested.ExtendDeadline(std::chrono::steady_clock::now() + 1h);
  requested.Request();
  CHECK(requested.stopping());
  CHECK_FALSE(requested.expired());
}

TEST_CASE("the lease holder's status round-trips, and a record without one reads as before",
          "[lease]") {
  common::LeaseHolder h{"core-1", "node-a", 7,
                        1,        2,        {{"blocked_visitors", 2}, {"blocked_sites", 1}}};
  auto back = common::LeaseHolder::FromJson(h.ToJson());
  REQUIRE(back);
  CHECK(back->status.at("blocked_visitors") == 2);
  CHECK(back->status.at("blocked_sites") == 1);
  auto old = common::LeaseHolder::FromJson(
      R"({"instance":"a","host":"h","pid":1,"started_unix_ms":1,"acquired_unix_ms":2})");
  REQUIRE(old);
  CHECK(old->status.empty());
  // Whatever else a status holds is left out, not trusted.
  auto odd = common::LeaseHolder::FromJson(
      R"({"instance":"a","host":"h","pid":1,"started_unix_ms":1,"acquired_unix_ms":2,)"
      R"("status":{"n":"x","m":1.5,"k":3}})");
  REQUIRE(odd);
  CHECK(odd->status.size() == 1);
  CHECK(odd->status.at("k") == 3);
}

TEST_CASE("JetStreamReach: lost after a TTL of unanswered requests while connected", "[lease]") {
  using C = common::JetStreamReach::Clock;
  const C::time_point s0{std::chrono::seconds(1000)};
  common::JetStreamReach reach(15s);
  CHECK_FALSE(reach.Lost(s0));
  CHECK(reach.SilentFor(s0) == 0ms);
  // Creates every second, none answered: silent since the first one was sent.
  for (int i = 0; i < 15; ++i) reach.Unanswered(s0 + std::chrono::seconds(i));
  CHECK(reach.SilentFor(s0 + 14s) == 14s);
  CHECK_FALSE(reach.Lost(s0 + 14999ms));
  CHECK(reach.Lost(s0 + 15s));
  // Any answer (a refusal too: JetStream works) ends it.
  reach.Answered(s0 + 16s);
  CHECK_FALSE(reach.Lost(s0 + 16s));
  CHECK(reach.SilentFor(s0 + 40s) == 0ms);
  // Silence again, interrupted by a disconnection: nats.c reconnects, the count restarts.
  reach.Unanswered(s0 + 20s);
  reach.Disconnected();
  reach.Unanswered(s0 + 30s);
  CHECK_FALSE(reach.Lost(s0 + 44s));
  CHECK(reach.Lost(s0 + 45s));
}

TEST_CASE("ServersAvoiding puts the server left behind last and shuffles the others", "[lease]") {
  const std::vector<std::string> urls = {"tls://n1:4222", "tls://n2:4222", "tls://n3:4222"};
  std::set<std::string> firsts;
  for (uint64_t seed = 0; seed < 64; ++seed) {
    auto order = common::ServersAvoiding(urls, "tls://n2:4222", seed);
    REQUIRE(order.size() == 3);
    CHECK(order.back() == "tls://n2:4222");
    CHECK(std::set<std::string>(order.begin(), order.end()).size() == 3);
    firsts.insert(order.front());
  }
  CHECK(firsts == std::set<std::string>{"tls://n1:4222", "tls://n3:4222"});
  // Compared by host and port: nats.c reports the URL without user info, maybe another scheme.
  auto order =
      common::ServersAvoiding({"nats://u:p@n1:4222", "nats://u:p@n2:4222"}, "nats://n1:4222", 7);
  CHECK(order == std::vector<std::string>{"nats://u:p@n2:4222", "nats://u:p@n1:4222"});
  // Another port on the same host is another server; nothing to avoid: all kept.
  order = common::ServersAvoiding({"nats://h:4222", "nats://h:4223"}, "nats://h:4223/", 1);
  CHECK(order.back() == "nats://h:4223");
  CHECK(common::ServersAvoiding(urls, "", 3).size() == 3);
  CHECK(common::ServersAvoiding({"nats://only:4222"}, "nats://only:4222", 3) ==
        std::vector<std::string>{"nats://only:4222"});
}
