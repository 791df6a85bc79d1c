#include "platformctl/backlog.h"

#include <catch2/catch.hpp>

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
