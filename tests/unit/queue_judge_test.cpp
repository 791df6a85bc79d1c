#include "tests/support/queue_judge.h"

#include <catch2/catch.hpp>

using platformctl::backlog::ConsumerReading;
using platformctl::backlog::StreamReading;
namespace judge = testsupport::judge;

namespace {

StreamReading WorkQueue(uint64_t messages, uint64_t pending, uint64_t unacked) {
  StreamReading r;
  r.name = "WEB_EVENTS";
  r.work_queue = true;
  r.messages = messages;
  r.first_seq = messages > 0 ? 41 : 0;
  r.last_seq = messages > 0 ? 40 + messages : 0;
  ConsumerReading c;
  c.name = "replayer";
  c.pending = pending;
  c.unacked = unacked;
  r.consumers.push_back(c);
  return r;
}

}  // namespace

TEST_CASE("drained: every consumer answered with nothing pending and nothing unacked",
          "[queue_judge]") {
  CHECK(judge::Drained(WorkQueue(0, 0, 0)));
  CHECK_FALSE(judge::Drained(WorkQueue(5, 5, 0)));  // still to deliver
  CHECK_FALSE(judge::Drained(WorkQueue(5, 0, 5)));  // delivered, not acked
  CHECK_FALSE(judge::Drained(WorkQueue(5, 3, 2)));
  auto offline = WorkQueue(0, 0, 0);
  offline.consumers[0].offline = true;  // its numbers are unknown
  CHECK_FALSE(judge::Drained(offline));
  auto none = WorkQueue(0, 0, 0);
  none.consumers.clear();  // nobody consumes: nothing drains it
  CHECK_FALSE(judge::Drained(none));
  auto two = WorkQueue(0, 0, 0);
  two.consumers.push_back(two.consumers[0]);
  two.consumers[1].name = "other";
  CHECK(judge::Drained(two));
  two.consumers[1].unacked = 1;
  CHECK_FALSE(judge::Drained(two));
}

TEST_CASE("drained does not need an empty stream: what is held is counted as left behind",
          "[queue_judge]") {
  auto r = WorkQueue(3, 0, 0);  // acked, kept by JetStream (2.9.10)
  CHECK(judge::Drained(r));
  CHECK(judge::LeftBehind(r) == 3);
  CHECK(judge::LeftBehind(WorkQueue(0, 0, 0)) == 0);
}

TEST_CASE("left behind is what the consumers neither have to deliver nor have unacked",
          "[queue_judge]") {
  CHECK(judge::LeftBehind(WorkQueue(10, 6, 4)) == 0);
  CHECK(judge::LeftBehind(WorkQueue(10, 6, 1)) == 3);
  CHECK(judge::LeftBehind(WorkQueue(10, 20, 0)) == 0);  // a reading racing a publish: floored
  // The one-consumer rule is platformctl's.
  auto r = WorkQueue(10, 6, 1);
  CHECK(judge::LeftBehind(r) == platformctl::backlog::Unclaimed(r, r.consumers[0]));

  auto none = WorkQueue(7, 0, 0);
  none.consumers.clear();
  CHECK(judge::LeftBehind(none) == 7);
  auto offline = WorkQueue(7, 7, 0);
  offline.consumers[0].offline = true;  // claims nothing: an upper bound, Drained is false
  CHECK(judge::LeftBehind(offline) == 7);

  // A work queue's consumers are disjoint: their claims add up.
  auto wq = WorkQueue(10, 3, 1);
  ConsumerReading second;
  second.name = "other";
  second.pending = 4;
  wq.consumers.push_back(second);
  CHECK(judge::LeftBehind(wq) == 2);
  // Any other stream's consumers each see every message: the largest claim counts.
  auto limits = wq;
  limits.work_queue = false;
  CHECK(judge::LeftBehind(limits) == 6);
}

TEST_CASE("describe names the stream, its held sequences and each consumer", "[queue_judge]") {
  CHECK(judge::Describe(WorkQueue(3, 0, 0)) ==
        "WEB_EVENTS: drained; holds 3 (seq 41..43), 3 left behind; consumer replayer pending 0 "
        "unacked 0");
  CHECK(judge::Describe(WorkQueue(0, 0, 0)) ==
        "WEB_EVENTS: drained; holds 0, 0 left behind; consumer replayer pending 0 unacked 0");
  auto r = WorkQueue(5, 2, 3);
  r.consumers[0].offline = true;
  CHECK(judge::Describe(r) ==
        "WEB_EVENTS: not drained; holds 5 (seq 41..45), 5 left behind; consumer replayer offline");
  r.consumers.clear();
  CHECK(judge::Describe(r) ==
        "WEB_EVENTS: not drained; holds 5 (seq 41..45), 5 left behind; no consumer");
}

TEST_CASE("stored once: lost is published, not stored and not dead-lettered", "[queue_judge]") {
  auto t = judge::Count("web events", 2000, 0, 0, 0);
  CHECK(t.stored == 2000);
  CHECK(t.Lost() == 0);
  CHECK(t.StoredOnce());
  CHECK(t.Describe() ==
        "web events: published 2000, stored 2000 distinct, duplicates 0, dead-lettered 0, lost 0");

  t = judge::Count("web events", 2000, 5, 3, 2);
  CHECK(t.stored == 1995);
  CHECK(t.Missing() == 5);
  CHECK(t.Lost() == 3);
  CHECK_FALSE(t.StoredOnce());
  CHECK(t.Describe() ==
        "web events: published 2000, stored 1995 distinct, duplicates 3, dead-lettered 2, lost 3");

  // A DLQ count from the whole stream may exceed this test's missing: lost floors at zero.
  CHECK(judge::Count("metric batches", 10, 1, 0, 4).Lost() == 0);
  // Duplicates alone, or a dead letter alone, are not "stored once".
  CHECK_FALSE(judge::Count("web events", 10, 0, 1, 0).StoredOnce());
  CHECK_FALSE(judge::Count("web events", 10, 1, 0, 1).StoredOnce());
  // More missing than published (a bad count) never makes stored negative.
  CHECK(judge::Count("web events", 3, 9, 0, 0).stored == 0);
}
