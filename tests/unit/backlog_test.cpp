#include "platformctl/backlog.h"

#include <catch2/catch.hpp>
#include <sstream>

#include "platformctl/streams.h"

using namespace platformctl::backlog;

namespace {
constexpr int64_t kSec = 1'000'000'000;

StreamReading Reading(int64_t at_s, uint64_t messages, uint64_t last_seq) {
  StreamReading r;
  r.name = "WEB_EVENTS";
  r.read_at_ns = at_s * kSec;
  r.messages = messages;
  r.last_seq = last_seq;
  r.first_seq = last_seq - messages + 1;
  r.first_ns = (at_s - 600) * kSec;
  return r;
}
}  // namespace

TEST_CASE("rates are differences over the interval, floored at zero", "[backlog]") {
  CHECK(*Rate(100, 300, 2.0) == Approx(100));
  CHECK(*Rate(300, 100, 2.0) == 0);  // a reset is not negative traffic
  CHECK_FALSE(Rate(1, 2, 0));
}

TEST_CASE("one reading: ages but no rates", "[backlog]") {
  auto v = Compute(std::nullopt, Reading(1000, 50, 50));
  REQUIRE(v.oldest_age_seconds);
  CHECK(*v.oldest_age_seconds == Approx(600));
  CHECK_FALSE(v.in_rate);
  CHECK_FALSE(v.out_rate);
  CHECK_FALSE(v.time_to_clear_seconds);
}

TEST_CASE("an empty stream has no oldest message and clears in zero", "[backlog]") {
  auto v = Compute(std::nullopt, Reading(1000, 0, 50));
  CHECK_FALSE(v.oldest_ns);
  CHECK_FALSE(v.oldest_age_seconds);
  CHECK(v.draining);
  CHECK(*v.time_to_clear_seconds == 0);
}

TEST_CASE("in, out and time-to-clear from two readings", "[backlog]") {
  // 10 s apart: 100 arrived (last_seq 1000 -> 1100), held went 1000 -> 600, so 500 left.
  auto v = Compute(Reading(0, 1000, 1000), Reading(10, 600, 1100));
  CHECK(*v.in_rate == Approx(10));
  CHECK(*v.out_rate == Approx(50));
  CHECK(v.draining);
  CHECK(*v.time_to_clear_seconds == Approx(600.0 / 40));
}

TEST_CASE("a growing queue is not draining and has no time-to-clear", "[backlog]") {
  auto v = Compute(Reading(0, 100, 100), Reading(10, 200, 250));
  CHECK(*v.in_rate == Approx(15));
  CHECK(*v.out_rate == Approx(5));
  CHECK_FALSE(v.draining);
  CHECK_FALSE(v.time_to_clear_seconds);
}

TEST_CASE("pending and unacked stay apart, and a full unacked window with no acks is wedged",
          "[backlog]") {
  auto before = Reading(0, 1000, 1000);
  auto now = Reading(5, 1000, 1000);
  ConsumerReading c;
  c.name = "replayer";
  c.pending = 0;     // nothing left to hand out...
  c.unacked = 1000;  // ...because everything sits unacked in the consumer
  c.max_ack_pending = 1000;
  c.delivered_seq = 1000;
  c.ack_floor_seq = 0;
  before.consumers = {c};
  now.consumers = {c};
  auto v = Compute(before, now);
  REQUIRE(v.consumers.size() == 1);
  CHECK(v.consumers[0].now.pending == 0);
  CHECK(v.consumers[0].now.unacked == 1000);
  CHECK(v.consumers[0].saturated);
  CHECK(v.consumers[0].wedged);
  CHECK(*v.consumers[0].ack_rate == 0);
  CHECK_FALSE(v.draining);

  // Acks moving: not wedged, rate from the ack floor.
  now.consumers[0].ack_floor_seq = 200;
  now.consumers[0].last_acked_ns = 4 * kSec;
  now.consumers[0].unacked = 800;
  v = Compute(before, now);
  CHECK_FALSE(v.consumers[0].wedged);
  CHECK_FALSE(v.consumers[0].saturated);
  CHECK(*v.consumers[0].ack_rate == Approx(40));
}

namespace {
// A work queue of `messages` from `first_seq`, its one consumer with the given counts and ack
// floor (a stream sequence).
StreamReading Queue(int64_t at_s, uint64_t messages, uint64_t first_seq, uint64_t pending,
                    uint64_t unacked, uint64_t floor_seq) {
  StreamReading r;
  r.name = "WEB_EVENTS";
  r.work_queue = true;
  r.read_at_ns = at_s * kSec;
  r.messages = messages;
  r.first_seq = first_seq;
  r.last_seq = floor_seq + pending + unacked;
  r.first_ns = (at_s - 600) * kSec;
  ConsumerReading c;
  c.name = "replayer";
  c.pending = pending;
  c.unacked = unacked;
  c.ack_floor_stream_seq = floor_seq;
  r.consumers.push_back(c);
  return r;
}
}  // namespace

TEST_CASE("left behind: a held message the work queue's consumer acked, seen in two readings",
          "[backlog]") {
  // Message 63009 still held; the consumer acked up to 74836 and has nothing else.
  auto v = Compute(Queue(0, 1, 63009, 0, 0, 74836), Queue(10, 1, 63009, 0, 0, 74900));
  REQUIRE(v.left_behind);
  CHECK(*v.left_behind == 1);
  CHECK(v.draining);  // nothing else is waiting
  CHECK(*v.time_to_clear_seconds == 0);
  // With 50 messages waiting behind it, only those count for the time to clear.
  v = Compute(Queue(0, 101, 63009, 100, 0, 74836), Queue(10, 51, 63009, 50, 0, 74886));
  REQUIRE(v.left_behind);
  CHECK(*v.left_behind == 1);
  REQUIRE(v.time_to_clear_seconds);
  CHECK(*v.time_to_clear_seconds == Approx(10));  // 50 waiting, out 5/s, in 0
}

TEST_CASE(
    "left behind: unknown from one reading, on other streams, or without one answering "
    "consumer, and none when the oldest moved or was never acked",
    "[backlog]") {
  CHECK_FALSE(Compute(std::nullopt, Queue(0, 1, 63009, 0, 0, 74836)).left_behind);
  auto limits = Queue(0, 1, 63009, 0, 0, 74836);
  limits.work_queue = false;
  CHECK_FALSE(Compute(limits, limits).left_behind);
  auto two = Queue(0, 1, 63009, 0, 0, 74836);
  two.consumers.push_back(two.consumers[0]);
  two.consumers[1].name = "other";
  CHECK_FALSE(Compute(two, two).left_behind);
  auto offline = Queue(0, 1, 63009, 0, 0, 74836);
  offline.consumers[0].offline = true;
  CHECK_FALSE(Compute(offline, offline).left_behind);

  // An ack that landed between the stream's and the consumer's request of the first reading:
  // the message is gone at the second.
  auto v = Compute(Queue(0, 5, 100, 4, 0, 100), Queue(10, 4, 101, 4, 0, 100));
  REQUIRE(v.left_behind);
  CHECK(*v.left_behind == 0);
  // The oldest still waits to be delivered or acked: a backlog, not left behind.
  v = Compute(Queue(0, 5, 100, 4, 1, 99), Queue(10, 5, 100, 4, 1, 99));
  REQUIRE(v.left_behind);
  CHECK(*v.left_behind == 0);
  CHECK_FALSE(v.draining);
}

TEST_CASE("a work queue held by one blocked visitor: keeping up, acks from removals, floor held",
          "[backlog]") {
  // Issue 36: 5 events/s arrive and are stored and acked; 100 events of one visitor wait in work
  // behind a head Umami keeps failing (the floor's message, the oldest held). Over 10 s: last_seq
  // +50, held stays 100 (50 removed), the consumer has everything (pending 0).
  auto before = Queue(0, 100, 1001, 0, 100, 1000);
  auto now = Queue(10, 100, 1001, 0, 100, 1000);
  now.last_seq = before.last_seq + 50;
  auto v = Compute(before, now);
  CHECK(*v.in_rate == Approx(5));
  CHECK(*v.out_rate == Approx(5));
  CHECK_FALSE(v.draining);
  CHECK(v.keeping_up);  // not "not draining": nothing waits for the replayer
  REQUIRE(v.consumers.size() == 1);
  CHECK(*v.consumers[0].ack_rate == Approx(5));  // from removals, not the held floor (0)
  CHECK_FALSE(v.consumers[0].ack_rate_from_floor);
  CHECK(v.consumers[0].floor_held);

  // Events waiting to be delivered: falling behind, not keeping up.
  auto behind = Queue(10, 150, 1001, 50, 100, 1000);
  behind.last_seq = before.last_seq + 100;
  v = Compute(before, behind);
  CHECK_FALSE(v.keeping_up);
  CHECK_FALSE(v.draining);
}

TEST_CASE("streams' text: blocked visitors as the replayer says, keeping up, the floor held",
          "[backlog]") {
  auto before = Queue(0, 100, 1001, 0, 100, 1000);
  auto now = Queue(10, 100, 1001, 0, 100, 1000);
  now.last_seq = before.last_seq + 50;
  auto v = Compute(before, now);
  v.worker = "core-1 (node-a, pid 7)";
  v.worker_status = {{"blocked_visitors", 2}, {"blocked_sites", 1}, {"sites_unknown", 0}};
  std::ostringstream out;
  platformctl::PrintStreamsText({v}, out);
  std::string text = out.str();
  INFO(text);
  CHECK_THAT(text, Catch::Contains("keeping up"));
  CHECK(text.find("not draining") == std::string::npos);
  CHECK_THAT(text, Catch::Contains("core-1 (node-a, pid 7) says: 2 visitor(s) of 1 site(s) "
                                   "blocked behind an event Umami keeps failing (oldest held"));
  CHECK_THAT(text, Catch::Contains("the rest drains at 5.0/s"));
  CHECK_THAT(text, Catch::Contains("ACK FLOOR HELD at stream seq 1001"));
}
