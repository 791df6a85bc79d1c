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
  h.RecordCheck(false, t0 + seconds(10));
  CHECK(h.Fresh(t0 + seconds(12)) == ProcessHealth::State::kDown);
  CHECK(h.Fresh(t0 + seconds(14)) == ProcessHealth::State::kUnknown);
  CHECK(h.Last() == ProcessHealth::State::kDown);
}

TEST_CASE("write fault: 3 distinct visitors failing, at least as many as stored", "[classifier]") {
  WriteFaultWindow w;
  TimePoint t{};
  CHECK_FALSE(w.RecordFailure("a", t));
  CHECK_FALSE(w.RecordFailure("a", t + seconds(1)));  // same visitor twice counts once
  CHECK_FALSE(w.RecordFailure("b", t + seconds(2)));
  CHECK(w.RecordFailure("c", t + seconds(3)));
  CHECK(w.faulted());
  // A success ends it, and the caller wakes every parked event.
  CHECK(w.RecordStored(t + seconds(4)));
  CHECK_FALSE(w.faulted());
  CHECK_FALSE(w.RecordStored(t + seconds(5)));
}

TEST_CASE("write fault: more stores than failing visitors is just bad events", "[classifier]") {
  WriteFaultWindow w;
  TimePoint t{};
  for (int i = 0; i < 10; ++i) w.RecordStored(t + std::chrono::milliseconds(i * 100));
  CHECK_FALSE(w.RecordFailure("a", t + seconds(2)));
  CHECK_FALSE(w.RecordFailure("b", t + seconds(2)));
  CHECK_FALSE(w.RecordFailure("c", t + seconds(2)));
  CHECK_FALSE(w.faulted());
  // A minute later the stores have left the window; failures from 3 visitors now decide.
  CHECK_FALSE(w.RecordFailure("d", t + seconds(63)));
  CHECK_FALSE(w.RecordFailure("e", t + seconds(64)));
  CHECK(w.RecordFailure("f", t + seconds(65)));
}

TEST_CASE("write fault: failures older than a minute do not count", "[classifier]") {
  WriteFaultWindow w;
  TimePoint t{};
  w.RecordFailure("a", t);
  w.RecordFailure("b", t + seconds(1));
  CHECK_FALSE(w.RecordFailure("c", t + seconds(90)));
  CHECK_FALSE(w.faulted());
}
