// The crash-loop guard's decisions (common/crash_guard.h): which deliveries are read, marked or
// dead-lettered, and what a marker and the dead letter's detail say.
#include <catch2/catch.hpp>

#include "common/crash_guard.h"

namespace cg = common::crash_guard;

TEST_CASE("a first delivery is read without a marker, a redelivery under one", "[crash_guard]") {
  CHECK(cg::Decide(1, false) == cg::Step::kRead);
  // A first delivery cannot have been read before: a marker for it (planted, or left by a
  // message of the same sequence in a stream recreated since) does not stop it.
  CHECK(cg::Decide(1, true) == cg::Step::kRead);
  CHECK(cg::Decide(2, false) == cg::Step::kMarkThenRead);
  CHECK(cg::Decide(40, false) == cg::Step::kMarkThenRead);
}

TEST_CASE("a redelivery whose marker is still there is dead-lettered", "[crash_guard]") {
  // A message that kills every reader: delivery 1 read unmarked (dies), delivery 2 read under a
  // marker (dies, the marker stays), delivery 3 finds it: two deliveries after the first death.
  CHECK(cg::Decide(2, true) == cg::Step::kDeadLetter);
  CHECK(cg::Decide(3, true) == cg::Step::kDeadLetter);
}

TEST_CASE("a marker of the very process that finds it is read again, not dead-lettered",
          "[crash_guard]") {
  // The process lives: its lease was lost (or the marker's removal failed) while it read the
  // message, which did not kill it (a partition on nats-server 2.15.1 dead-lettered a good
  // event this way).
  CHECK(cg::Decide(3, true, true) == cg::Step::kMarkThenRead);
  CHECK(cg::Decide(3, true, false) == cg::Step::kDeadLetter);
  CHECK(cg::Decide(1, true, true) == cg::Step::kRead);
  const std::string me = cg::ThisProcess();
  CHECK(me == cg::ThisProcess());
  CHECK(me.find('@') != std::string::npos);
  auto m = cg::Decode(cg::Encode({2, 5, "core-1", me}));
  REQUIRE(m);
  CHECK(m->instance == "core-1");
  CHECK(m->process == me);
  // A marker written before the process was kept: no process, so never this one's.
  m = cg::Decode("2 5 core 1");
  REQUIRE(m);
  CHECK(m->instance == "core 1");
  CHECK(m->process.empty());
  CHECK_FALSE(cg::Decode("2 5 core\t" + std::string(200, 'p')));
}

TEST_CASE("markers encode and decode, and foreign values are refused", "[crash_guard]") {
  const std::string v = cg::Encode({2, 1765000000000, "core-1", ""});
  CHECK(v == "2 1765000000000 core-1");
  auto m = cg::Decode(v);
  REQUIRE(m);
  CHECK(m->delivery == 2);
  CHECK(m->unix_ms == 1765000000000);
  CHECK(m->instance == "core-1");
  CHECK(cg::Encode({3, 1, "a\x1b[31m\nb", ""}) == "3 1 a?[31m?b");
  CHECK_FALSE(cg::Decode(""));
  CHECK_FALSE(cg::Decode("2"));
  CHECK_FALSE(cg::Decode("2 x core"));
  CHECK_FALSE(cg::Decode("-2 1 core"));
  CHECK_FALSE(cg::Decode("2 1 " + std::string(200, 'i')));
  CHECK(cg::Key("replayer", 42) == "replayer.42");
}

TEST_CASE("the dead letter's detail names the reader, or says the marker was unreadable",
          "[crash_guard]") {
  CHECK(cg::Detail("2 1765000000000 core-1", 3) ==
        "delivery 3; instance core-1 began reading delivery 2 at unix ms 1765000000000 and never "
        "finished");
  CHECK(cg::Detail("\x1b[2J planted", 3) == "delivery 3; an unreadable marker: ?[2J planted");
  CHECK(cg::Detail(std::string(300, 'x'), 2).size() < 120);
  // The reason is one countable sentence (dead-letter reasons are grouped by it).
  CHECK(std::string(cg::kReason).find_first_of("0123456789") == std::string::npos);
}

TEST_CASE("after a failure the guard rests, then asks the bucket again", "[crash_guard]") {
  // A bucket that does not answer would cost a request timeout per redelivery on the thread that
  // reads them (partition (f) on nats-server 2.15.1: the queue stopped for the whole cut).
  using namespace std::chrono_literals;
  cg::Rest rest(30s);
  const auto t0 = cg::Rest::Clock::time_point{} + 1h;
  CHECK_FALSE(rest.Resting(t0));
  rest.Failed(t0);
  CHECK(rest.Resting(t0));
  CHECK(rest.Resting(t0 + 29999ms));
  CHECK_FALSE(rest.Resting(t0 + 30s));
  // A failure during a rest starts a new one from then.
  rest.Failed(t0 + 20s);
  CHECK(rest.Resting(t0 + 49s));
  CHECK_FALSE(rest.Resting(t0 + 50s));
  CHECK(cg::kRestAfterFailure == 30s);
}
