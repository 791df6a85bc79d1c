// The engine core, input by input: each test drives it by hand and reads the commands it gives.
// (The seeded simulator, tests/sim, drives it through thousands of worlds; these pin single
// behaviours down.)
#include "replayer/engine_core.h"

#include <catch2/catch.hpp>

#include "replayer/classifier.h"
#include "replayer/visit_state.h"
#include "tests/replayer/core_driver.h"

using namespace replayer;
using std::chrono::milliseconds;
using std::chrono::seconds;

using namespace core_test;

TEST_CASE("core: no send before a process passes its checks, then fetch, send, guard, ack",
          "[core]") {
  Driver d;
  d.core.Start(d.now);
  d.Take();
  auto check = d.One<CheckCmd>();
  auto fetch = d.One<FetchCmd>();
  CHECK(fetch.max_messages == 10);
  d.Fetched({d.Msg(1, Body("e1", "v1", 1'764'000'000'000))});
  d.Visit();
  CHECK(d.All<SendCmd>().empty());  // the process is not known to be up yet
  d.Pass(check.check_id);
  auto send = d.One<SendCmd>();
  CHECK(send.stream_seq == 1);
  CHECK(Driver::Header(send, "x-umami-cache").empty());
  CHECK(Driver::Header(send, "User-Agent") == "Mozilla/5.0");
  CHECK(d.core.held() == 1);
  d.Answer(send, 200, R"({"cache":")" + std::string(kToken) + R"("})");
  CHECK(d.Noted(Note::Kind::kStored));
  auto visit = d.One<PutVisitCmd>();
  CHECK(VisitStates::Decode(visit.value).token == kToken);
  auto guard = d.One<PutGuardCmd>();
  CHECK(guard.key == "e1");
  CHECK(d.All<AckCmd>().empty());  // not before the guard record is stored
  d.core.OnPublished(guard.pub_id, {}, d.now);
  d.Take();
  CHECK(d.One<AckCmd>().why == AckWhy::kStored);
  CHECK(d.core.held() == 0);
  CHECK(d.core.SelfCheck().empty());
}

TEST_CASE("core: per visitor one send at a time, in order, others at once", "[core]") {
  Driver d;
  d.Up();
  d.Fetched({d.Msg(1, Body("a1", "a", 1000)), d.Msg(2, Body("a2", "a", 2000)),
             d.Msg(3, Body("b1", "b", 3000))});
  // Two visit lookups: answer both.
  for (const auto& v : d.All<VisitLookupCmd>()) {
    d.core.OnVisitAnswer(v.lane, Lookup::kAbsent, "", d.now);
  }
  d.Take();
  auto sends = d.All<SendCmd>();
  REQUIRE(sends.size() == 2);
  CHECK(sends[0].stream_seq == 1);
  CHECK(sends[1].stream_seq == 3);
  d.Answer(sends[0], 200, kToken);
  auto next = d.One<SendCmd>();
  CHECK(next.stream_seq == 2);
  CHECK(Driver::Header(next, "x-umami-cache") == kToken);  // the same visit continues
}

TEST_CASE("core: a message held and delivered again is adopted, never sent twice", "[core]") {
  Driver d;
  d.Up();
  d.Fetched({d.Msg(7, Body("e7", "v", 1000))});
  d.Visit();
  auto send = d.One<SendCmd>();
  auto again = d.Msg(7, Body("e7", "v", 1000), 2);
  d.Fetched({again});
  CHECK(d.All<SendCmd>().empty());
  CHECK(d.All<GuardLookupCmd>().empty());
  CHECK(d.One<ForgetCmd>().ref == 1);  // the older delivery's handle
  CHECK(d.core.held() == 1);
  d.Answer(send, 200, kToken);
  auto guard = d.One<PutGuardCmd>();
  d.core.OnPublished(guard.pub_id, {}, d.now);
  d.Take();
  CHECK(d.One<AckCmd>().ref == again.ref);  // the newest delivery is answered
  // Finished here: a third delivery is acked as a duplicate without reading the guard.
  d.Fetched({d.Msg(7, Body("e7", "v", 1000), 3)});
  CHECK(d.One<AckCmd>().why == AckWhy::kDuplicate);
  CHECK(d.core.held() == 0);
}

TEST_CASE("core: a redelivery reads the guard, one stored before is acked, not sent", "[core]") {
  Driver d;
  d.Up();
  d.Fetched({d.Msg(9, Body("e9", "v", 1000), 2)});
  auto look = d.One<GuardLookupCmd>();
  CHECK(look.key == "e9");
  d.Visit();
  CHECK(d.All<SendCmd>().empty());  // not before the guard answered
  d.core.OnGuardAnswer(look.lookup_id, Lookup::kError, d.now);
  d.Take();
  d.Later(seconds(1));  // read again after an error, the event keeps its place
  auto again = d.One<GuardLookupCmd>();
  d.core.OnGuardAnswer(again.lookup_id, Lookup::kFound, d.now);
  d.Take();
  CHECK(d.One<AckCmd>().why == AckWhy::kDuplicate);
  CHECK(d.All<SendCmd>().empty());
}

TEST_CASE("core: poison at once goes to WEB_DLQ without a send, acked once the copy is stored",
          "[core]") {
  Driver d;
  d.Up();
  d.Fetched({d.Msg(1, Body("e1", "v", 1000, R"(,"data":{"amount":1e21})"))});
  auto dl = d.One<DeadLetterCmd>();
  CHECK_THAT(dl.reason, Catch::Contains("'amount'"));
  CHECK(dl.code == "poison");
  CHECK(d.All<SendCmd>().empty());
  d.core.OnPublished(dl.pub_id, {PubOutcome::Kind::kTooLarge, "maximum payload exceeded"}, d.now);
  d.Take();
  CHECK(d.All<AckCmd>().empty());
  CHECK(d.Noted(Note::Kind::kDlqPublishFailed));
  CHECK(d.out.notes.back().code == "too_large");
  d.Later(seconds(61));  // refused for its size: tried again after a minute, not at once
  auto again = d.One<DeadLetterCmd>();
  d.core.OnPublished(again.pub_id, {}, d.now);
  d.Take();
  CHECK(d.One<AckCmd>().why == AckWhy::kDeadLettered);
}

TEST_CASE("core: 4 failures with checks passing, at 4, 8 and 24 s: WEB_DLQ with Umami's answer",
          "[core]") {
  Driver d;
  d.Up();
  d.Fetched({d.Msg(1, Body("e1", "v", 1000))});
  d.Visit();
  auto s = d.One<SendCmd>();
  for (int i = 0; i < 4; ++i) {
    d.Answer(s, 400, "name must be at most 50 characters");
    auto check = d.One<CheckCmd>();  // judged by a check begun after the send
    d.Pass(check.check_id);
    if (i == 3) break;
    CHECK(d.All<SendCmd>().empty());
    d.Later(RetryDelay(i + 1) - milliseconds(1));
    CHECK(d.All<SendCmd>().empty());
    d.Later(milliseconds(1));
    s = d.One<SendCmd>();
  }
  auto dl = d.One<DeadLetterCmd>();
  CHECK(dl.reason == kFailedReason);
  CHECK_THAT(dl.detail, Catch::Contains("HTTP 400"));
}

TEST_CASE("core: an outage is not counted, the event waits for the process to come back",
          "[core]") {
  Driver d;
  d.Up();
  d.Fetched({d.Msg(1, Body("e1", "v", 1000))});
  d.Visit();
  auto s = d.One<SendCmd>();
  for (int i = 0; i < 10; ++i) {
    d.Answer(s, 0);
    auto check = d.One<CheckCmd>();
    d.Fail(check.check_id);
    CHECK_FALSE(d.core.ProcessUp(0));
    CHECK(d.All<SendCmd>().empty());
    d.Later(seconds(2));  // rechecked every 2 s while down
    check = d.One<CheckCmd>();
    d.Pass(check.check_id);
    s = d.One<SendCmd>();
  }
  d.Answer(s, 200, kToken);
  CHECK(d.All<DeadLetterCmd>().empty());
}

TEST_CASE("core: a check that never answers counts as failed and a new one follows", "[core]") {
  Driver d;
  d.core.Start(d.now);
  d.Take();
  auto first = d.One<CheckCmd>();
  CHECK(first.timeout ==
        Driver::Config().send_timeout);  // both requests are given a send's patience
  d.Later(Driver::Config().send_timeout + seconds(4));
  CHECK_FALSE(d.Noted(Note::Kind::kCheckTimedOut));  // a slow Umami may still answer
  d.Later(seconds(1));
  CHECK(d.Noted(Note::Kind::kCheckTimedOut));
  // Its requests' own timeouts passed 5 s ago without an answer: the HTTP client is stuck.
  CHECK(d.Noted(Note::Kind::kCheckStuck));
  auto next = d.One<CheckCmd>();  // at once: the last one began long ago
  d.Pass(next.check_id);
  CHECK(d.core.ProcessUp(0));
  d.Later(seconds(30));
  CHECK_FALSE(d.Noted(Note::Kind::kCheckStuck));  // the first one still has no answer: said once
}

TEST_CASE("core: a write fault from new events of 3 visitors parks them, a store wakes them",
          "[core]") {
  Driver d;
  d.Up();
  std::vector<Delivery> batch;
  for (int i = 0; i < 5; ++i) {
    batch.push_back(d.Msg(i + 1, Body("e" + std::to_string(i), "v" + std::to_string(i), 1000)));
  }
  d.Fetched(std::move(batch));
  for (const auto& v : d.All<VisitLookupCmd>()) {
    d.core.OnVisitAnswer(v.lane, Lookup::kAbsent, "", d.now);
  }
  d.Take();
  auto sends = d.All<SendCmd>();
  REQUIRE(sends.size() == 5);
  d.now += milliseconds(5);
  for (int i = 0; i < 4; ++i) {
    d.core.OnSendAnswer(sends[i].send_id,
                        {500, "cannot execute INSERT in a read-only transaction", "", 0}, d.now);
  }
  d.Take();
  d.Pass(d.One<CheckCmd>().check_id);
  CHECK(d.core.ProcessWriteFault(0));
  CHECK(d.Noted(Note::Kind::kWriteFaultBegan));
  d.Later(seconds(30));
  d.now += milliseconds(5);
  auto retries = d.All<SendCmd>();
  CHECK(retries.size() == 4);
  for (const auto& s : retries) d.core.OnSendAnswer(s.send_id, {500, "ro", "", 0}, d.now);
  d.Take();
  d.Pass(d.One<CheckCmd>().check_id);  // still a write fault: parked again, nothing counted
  CHECK(d.All<SendCmd>().empty());
  // The fifth send began before the failures: its store proves nothing about the fault.
  d.Answer(sends[4], 200, kToken);
  CHECK(d.core.ProcessWriteFault(0));
  auto guard = d.One<PutGuardCmd>();
  d.core.OnPublished(guard.pub_id, {}, d.now);
  d.Take();
  // A new event stores: the fault is over and the parked ones go at once.
  d.Fetched({d.Msg(10, Body("e10", "v9", 1000))});
  d.Visit();
  d.Answer(d.One<SendCmd>(), 200, kToken);
  CHECK_FALSE(d.core.ProcessWriteFault(0));
  CHECK(d.Noted(Note::Kind::kWriteFaultEnded));
  CHECK(d.All<SendCmd>().size() == 4);
  CHECK(d.All<DeadLetterCmd>().empty());
}

TEST_CASE("core: a visit is not continued across 30 minutes of the visitor's own time", "[core]") {
  Driver d;
  d.Up();
  int64_t t0 = 1'764'000'000'000;
  d.Fetched({d.Msg(1, Body("e1", "v", t0)), d.Msg(2, Body("e2", "v", t0 + 29 * 60'000)),
             d.Msg(3, Body("e3", "v", t0 + 3 * 3600'000)),
             d.Msg(4, Body("e4", "v", t0 + 3 * 3600'000 + 60'000))});
  d.Visit();
  auto s = d.One<SendCmd>();
  CHECK(Driver::Header(s, "x-umami-cache").empty());
  d.Answer(s, 200, kToken);
  s = d.One<SendCmd>();
  CHECK(Driver::Header(s, "x-umami-cache") == kToken);  // 29 minutes into the visit
  d.Answer(s, 200, kToken);
  s = d.One<SendCmd>();
  CHECK(Driver::Header(s, "x-umami-cache").empty());  // three hours later: a new visit
  d.Answer(s, 200, kToken2);
  s = d.One<SendCmd>();
  CHECK(Driver::Header(s, "x-umami-cache") == kToken2);
}

TEST_CASE("core: a 2xx reply that is no token is ignored and noted once", "[core]") {
  Driver d;
  d.Up();
  d.Fetched({d.Msg(1, Body("e1", "v", 1000)), d.Msg(2, Body("e2", "v", 2000))});
  d.Visit();
  d.Answer(d.One<SendCmd>(), 200, "<html>" + std::string(70'000, 'x') + "</html>");
  CHECK(d.Noted(Note::Kind::kTokenIgnored));
  auto s = d.One<SendCmd>();
  CHECK(Driver::Header(s, "x-umami-cache").empty());
}

TEST_CASE("core: SIGTERM waits for sends under way, then hands everything back", "[core]") {
  Driver d;
  d.Up();
  d.Fetched({d.Msg(1, Body("e1", "a", 1000)), d.Msg(2, Body("e2", "a", 2000))});
  d.Visit();
  auto s = d.One<SendCmd>();
  d.core.OnStop(d.now);
  d.Take();
  CHECK_FALSE(d.core.Done());
  d.Later(seconds(15));  // the send never answered: its message comes back after the timeout
  CHECK(d.core.Done());
  auto naks = d.All<NakCmd>();
  REQUIRE(naks.size() == 2);
  for (const auto& n : naks)
    CHECK(n.delay == (n.ref == 1 ? milliseconds(30'000) : milliseconds(0)));
  (void)s;
}

TEST_CASE("core: a lost lease drops what is held without a nak, but acks what is stored",
          "[core]") {
  Driver d;
  d.Up();
  d.Fetched({d.Msg(1, Body("e1", "a", 1000)), d.Msg(2, Body("e2", "b", 1000))});
  for (const auto& v : d.All<VisitLookupCmd>()) {
    d.core.OnVisitAnswer(v.lane, Lookup::kAbsent, "", d.now);
  }
  d.Take();
  auto sends = d.All<SendCmd>();
  d.core.OnLeadershipLost(d.now);
  d.Take();
  d.Answer(sends[0], 200, kToken);  // the guard record is under way when the term ends
  d.Answer(sends[1], 0);
  d.Later(seconds(15));
  CHECK(d.core.Done());
  CHECK(d.All<NakCmd>().empty());
  CHECK(d.One<AckCmd>().why == AckWhy::kStoredUnguarded);
  CHECK(d.One<ForgetCmd>().ref == 2);
}

TEST_CASE("core: the byte budget, no fetch beyond it, but one huge message alone", "[core]") {
  CoreConfig c = Driver::Config();
  c.max_bytes_in_flight = 1000;
  c.max_message_bytes = 4000;
  Driver d(c);
  d.core.Start(d.now);
  d.Take();
  auto f = d.One<FetchCmd>();
  CHECK(f.max_bytes == 4000);  // nothing held: room for the largest message
  auto big = d.Msg(1, Body("e1", "v", 1000));
  big.bytes = 3000;
  d.Fetched({big});
  CHECK(d.All<FetchCmd>().empty());  // over the budget: no fetch while it is held
  CHECK(d.core.held_bytes() == 3000);
}

TEST_CASE("core: a fetch asks for half the room, a message being charged as parsed too", "[core]") {
  CoreConfig c = Driver::Config();
  c.max_bytes_in_flight = 100'000;
  c.max_message_bytes = 4000;
  Driver d(c);
  d.core.Start(d.now);
  d.Take();
  // Half the room once 10 messages' records (the fetch batch) are set aside.
  const auto first = d.One<FetchCmd>();
  CHECK(first.max_messages == 10);
  CHECK(first.max_bytes == (100'000 - 10 * kHeldMessageBytes) / 2);
  auto m = d.Msg(1, Body("e1", "v", 1000));
  m.bytes = 30'000;  // as received, as parsed, and its records
  d.Fetched({m});
  CHECK(d.core.held_bytes() == 30'000);
  const auto next = d.All<FetchCmd>();
  REQUIRE(next.size() == 1);
  CHECK(next[0].max_bytes == (70'000 - 10 * kHeldMessageBytes) / 2);
}

TEST_CASE("core: a guard record that cannot be written holds new sends until one is written",
          "[core]") {
  // A leader cut off from NATS can still reach Umami: whatever it stores then it cannot record,
  // and the next leader sends it again. So after a failed record no new send starts.
  Driver d;
  d.Up();
  d.Fetched({d.Msg(1, Body("a1", "a", 1000)), d.Msg(2, Body("b1", "b", 1000))});
  for (const auto& v : d.All<VisitLookupCmd>()) {
    d.core.OnVisitAnswer(v.lane, Lookup::kAbsent, "", d.now);
  }
  d.Take();
  auto sends = d.All<SendCmd>();
  REQUIRE(sends.size() == 2);
  d.Answer(sends[0], 200, kToken);
  auto guard = d.One<PutGuardCmd>();
  d.core.OnPublished(guard.pub_id, {PubOutcome::Kind::kFailed, "timeout"}, d.now);
  d.Take();
  CHECK(d.Noted(Note::Kind::kGuardFailed));
  // A send already under way finishes; its record waits behind the same gate's probe.
  d.Answer(sends[1], 200, kToken2);
  auto guard_b = d.One<PutGuardCmd>();
  // New events arrive: none is sent while no record can be written.
  d.Fetched({d.Msg(3, Body("c1", "c", 1000))});
  d.Visit();
  CHECK(d.All<SendCmd>().empty());
  d.Later(seconds(1));  // the failed record is written again
  auto retry = d.One<PutGuardCmd>();
  CHECK(retry.key == "a1");
  CHECK(d.All<SendCmd>().empty());
  d.core.OnPublished(retry.pub_id, {}, d.now);  // KV answers again
  d.Take();
  CHECK(d.One<AckCmd>().why == AckWhy::kStored);
  CHECK(d.All<SendCmd>().empty());  // b1's record, written a second ago, is still unanswered
  d.core.OnPublished(guard_b.pub_id, {}, d.now);
  d.Take();
  CHECK(d.One<SendCmd>().stream_seq == 3);  // every record answered: sends resume at once
  CHECK(d.core.SelfCheck().empty());
}

TEST_CASE("core: a guard record unanswered for a second holds new sends until it is answered",
          "[core]") {
  // A cut-off leader's record fails only when its publish times out, seconds of sends later:
  // a record that waits a second closes the gate as a failed one does.
  Driver d;
  d.Up();
  d.Fetched({d.Msg(1, Body("a1", "a", 1000))});
  d.Visit();
  d.Answer(d.One<SendCmd>(), 200, kToken);
  auto guard = d.One<PutGuardCmd>();
  d.now += milliseconds(500);
  d.Fetched({d.Msg(2, Body("b1", "b", 1000))});
  d.Visit();
  auto early = d.One<SendCmd>();  // half a second: a slow bucket, not yet a closed gate
  CHECK(early.stream_seq == 2);
  d.now += milliseconds(600);
  d.Fetched({d.Msg(3, Body("c1", "c", 1000))});
  d.Visit();
  CHECK(d.All<SendCmd>().empty());  // the record has waited 1.1 s
  d.core.OnPublished(guard.pub_id, {}, d.now);
  d.Take();
  CHECK(d.One<AckCmd>().why == AckWhy::kStored);
  CHECK(d.One<SendCmd>().stream_seq == 3);
}

TEST_CASE("core: a long drain keeps the timer heap within twice the held events", "[core]") {
  // Each stored event arms a send timeout (35 s ahead) and then a guard timeout (10 s ahead);
  // each new arm leaves the one before stale. 3,000 events in 3 s left 6,000 entries before
  // the heap was compacted.
  Driver d;
  d.Up();
  constexpr int kEvents = 3000;
  constexpr int kVisitors = 10;
  int acked = 0;
  size_t most_timers = 0;
  uint64_t seq = 0;
  bool first = true;
  while (seq < static_cast<uint64_t>(kEvents)) {
    std::vector<Delivery> batch;
    for (int v = 0; v < kVisitors; ++v) {
      ++seq;
      batch.push_back(d.Msg(seq, Body("e" + std::to_string(seq), "v" + std::to_string(v),
                                      1'764'000'000'000 + static_cast<int64_t>(seq))));
    }
    d.core.OnFetched(std::move(batch), "", d.now);
    std::vector<Command> pending;
    auto collect = [&] {
      d.Take();
      for (auto& c : d.out.commands) pending.push_back(c);
      most_timers = std::max(most_timers, d.core.timers());
    };
    collect();
    if (first) {  // each visitor's state is read once; then it is known here
      for (const auto& c : std::vector<Command>(pending)) {
        if (auto* v = std::get_if<VisitLookupCmd>(&c)) {
          d.core.OnVisitAnswer(v->lane, Lookup::kAbsent, "", d.now);
          collect();
        }
      }
      first = false;
    }
    // Answer every send and every guard record until this batch is acked.
    for (size_t i = 0; i < pending.size(); ++i) {
      Command c = pending[i];
      if (auto* s = std::get_if<SendCmd>(&c)) {
        d.now += milliseconds(1);
        d.core.OnSendAnswer(
            s->send_id, {200, R"({"cache":")" + std::string(kToken) + R"("})", "", 0.001}, d.now);
        collect();
      } else if (auto* g = std::get_if<PutGuardCmd>(&c)) {
        d.core.OnPublished(g->pub_id, {}, d.now);
        collect();
      } else if (std::holds_alternative<AckCmd>(c)) {
        ++acked;
      }
    }
    REQUIRE(d.core.SelfCheck().empty());
  }
  CHECK(acked == kEvents);
  CHECK(d.core.held() == 0);
  CHECK(most_timers <= 1024);
  CHECK(d.core.timers() <= 1024);
}
