#include "replayer/classifier.h"

#include <catch2/catch.hpp>

using namespace replayer;
using K = Decision::Kind;
using std::chrono::seconds;

TEST_CASE("failed checks mean an outage: never counted", "[classifier]") {
  for (int before = 0; before < 10; ++before) {
    auto d = Decide(false, false, before);
    CHECK(d.kind == K::kOutage);
    CHECK(d.failures == before);
  }
}

TEST_CASE("passed checks count: 4 failures in about 36 s, then the DLQ", "[classifier]") {
  auto d1 = Decide(true, false, 0);
  auto d2 = Decide(true, false, d1.failures);
  auto d3 = Decide(true, false, d2.failures);
  auto d4 = Decide(true, false, d3.failures);
  CHECK(d1.kind == K::kRetry);
  CHECK(d2.kind == K::kRetry);
  CHECK(d3.kind == K::kRetry);
  CHECK(d4.kind == K::kDeadLetter);
  CHECK(d4.failures == 4);
  auto total = d1.delay + d2.delay + d3.delay;
  CHECK(total == seconds(36));
}

TEST_CASE("a write fault is not counted and retries every 30 s", "[classifier]") {
  auto d = Decide(true, true, 3);
  CHECK(d.kind == K::kWriteFault);
  CHECK(d.failures == 3);
  CHECK(d.delay == seconds(30));
}

TEST_CASE("health results are cached for a few seconds", "[classifier]") {
  ProcessHealth h(std::chrono::milliseconds(3000));
  TimePoint t0{};
  CHECK(h.Fresh(t0) == ProcessHealth::State::kUnknown);
  h.RecordCheck(false, t0 + seconds(9), t0 + seconds(10));
  CHECK(h.Fresh(t0 + seconds(12)) == ProcessHealth::State::kDown);
  CHECK(h.Fresh(t0 + seconds(14)) == ProcessHealth::State::kUnknown);
  // A failed send is judged only by a check that began after the send: one begun before may
  // have seen the process before the fault.
  CHECK(h.FreshSince(t0 + seconds(8), t0 + seconds(11)) == ProcessHealth::State::kDown);
  CHECK(h.FreshSince(t0 + seconds(9), t0 + seconds(11)) == ProcessHealth::State::kUnknown);
  CHECK(h.Last() == ProcessHealth::State::kDown);
}

TEST_CASE("write fault: 3 distinct visitors failing and no store since the run began",
          "[classifier]") {
  WriteFaultRun w;
  TimePoint t{};
  CHECK_FALSE(w.RecordFailure("a", t));
  CHECK_FALSE(w.RecordFailure("a", t + seconds(1)));  // same visitor twice counts once
  CHECK_FALSE(w.RecordFailure("b", t + seconds(2)));
  CHECK(w.RecordFailure("c", t + seconds(3)));
  CHECK(w.faulted());
  CHECK_FALSE(w.RecordFailure("d", t + seconds(4)));  // already a fault: no second start
  // A store ends it, and the caller wakes every parked event.
  CHECK(w.RecordStored(t + seconds(5)));
  CHECK_FALSE(w.faulted());
  CHECK_FALSE(w.RecordStored(t + seconds(6)));
}

TEST_CASE("write fault: the stores before the failures began do not count", "[classifier]") {
  // The rule this replaced compared failing visitors with the last minute's stores: under busy
  // traffic the stores made just before the fault outnumbered them.
  WriteFaultRun w;
  TimePoint t{};
  for (int i = 0; i < 1000; ++i) w.RecordStored(t + std::chrono::milliseconds(i * 10));
  CHECK_FALSE(w.RecordFailure("a", t + seconds(10)));
  CHECK_FALSE(w.RecordFailure("b", t + seconds(10)));
  CHECK(w.RecordFailure("c", t + seconds(10)));
}

TEST_CASE("write fault: a store among the failures is healthy traffic beside bad events",
          "[classifier]") {
  WriteFaultRun w;
  TimePoint t{};
  CHECK_FALSE(w.RecordFailure("a", t));
  CHECK_FALSE(w.RecordFailure("b", t + seconds(1)));
  CHECK_FALSE(w.RecordStored(t - seconds(1)));  // sent before the run began: proves nothing
  CHECK(w.RecordFailure("c", t + seconds(2)));
  CHECK_FALSE(w.RecordStored(t - seconds(1)));  // nor does it end the fault
  CHECK(w.faulted());
  CHECK(w.RecordStored(t + seconds(2)));
  CHECK_FALSE(w.RecordFailure("a", t + seconds(3)));
  CHECK_FALSE(w.RecordFailure("b", t + seconds(3)));
  CHECK_FALSE(w.RecordStored(t + seconds(3)));  // a new run begins after it
  CHECK_FALSE(w.RecordFailure("c", t + seconds(3)));
  CHECK_FALSE(w.RecordFailure("d", t + seconds(4)));
  CHECK_FALSE(w.faulted());
  CHECK(w.RecordFailure("e", t + seconds(5)));
}

TEST_CASE("write fault: failures more than a minute apart are no run", "[classifier]") {
  WriteFaultRun w;
  TimePoint t{};
  w.RecordFailure("a", t);
  w.RecordFailure("b", t + seconds(1));
  CHECK_FALSE(w.RecordFailure("c", t + seconds(90)));
  CHECK_FALSE(w.faulted());
  CHECK(w.visitors() == 1);
  // A visitor failing again keeps its place with its newest time.
  CHECK_FALSE(w.RecordFailure("d", t + seconds(100)));
  CHECK(w.RecordFailure("e", t + seconds(140)));
}
