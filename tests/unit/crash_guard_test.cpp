// The crash-loop guard's decisions (common/crash_guard.h): which deliveries are read, marked or
// dead-lettered, and what a marker and the dead letter's detail say.
#include <catch2/catch.hpp>

#include <optional>
#include <string>

#include "common/crash_guard.h"

namespace cg = common::crash_guard;

namespace {
const std::string kMe = "100@1";
cg::Step StepOf(uint64_t delivery, std::optional<std::string> found) {
  return cg::Decide(delivery, found, kMe).step;
}
std::string Foreign(uint32_t stops) { return cg::Encode({2, 5, "core-2", "200@1", stops}); }
}  // namespace

TEST_CASE("a first delivery is read without a marker, a redelivery under one", "[crash_guard]") {
  CHECK(StepOf(1, std::nullopt) == cg::Step::kRead);
  // A first delivery cannot have been read before: a marker for it (planted, or left by a
  // message of the same sequence in a stream recreated since) does not stop it.
  CHECK(StepOf(1, Foreign(1)) == cg::Step::kRead);
  const auto d = cg::Decide(2, std::nullopt, kMe);
  CHECK(d.step == cg::Step::kMarkThenRead);
  CHECK(d.stops == 0);
  CHECK_FALSE(d.stop_counted);
  CHECK(StepOf(40, std::nullopt) == cg::Step::kMarkThenRead);
}

TEST_CASE("one stopped reader is counted, the second dead-letters the message", "[crash_guard]") {
  // A reader killed from outside inside its marked window (kill -9, a lost node) leaves the same
  // marker a message that kills its reader leaves: one stop is read again, counted.
  auto d = cg::Decide(3, Foreign(0), kMe);
  CHECK(d.step == cg::Step::kMarkThenRead);
  CHECK(d.stops == 1);
  CHECK(d.stop_counted);
  // A marker that already counts a stop: the second stopped reader.
  d = cg::Decide(4, Foreign(1), kMe);
  CHECK(d.step == cg::Step::kDeadLetter);
  CHECK(d.stops == cg::kStoppedReaders);
  // A marker written before stops were counted reads as 0 stops.
  CHECK(StepOf(3, "2 5 core-2") == cg::Step::kMarkThenRead);
  CHECK(StepOf(3, "2 5 core-2\t200@1") == cg::Step::kMarkThenRead);
  // An unreadable marker counts one stop; a count past the limit stays at it.
  d = cg::Decide(3, std::string("\x1b[2J planted"), kMe);
  CHECK(d.step == cg::Step::kMarkThenRead);
  CHECK(d.stops == 1);
  CHECK(StepOf(3, Foreign(4'000'000'000u)) == cg::Step::kDeadLetter);
  CHECK(cg::Decide(3, Foreign(4'000'000'000u), kMe).stops == cg::kStoppedReaders);
}

TEST_CASE("a message that kills every reader is dead-lettered at its fourth delivery",
          "[crash_guard]") {
  // Each reader dies after writing its marker; the next leader (another process) finds it.
  std::optional<std::string> marker;
  uint64_t delivery = 1;
  for (int process = 1;; ++process, ++delivery) {
    const std::string me = std::to_string(process) + "@1";
    const auto d = cg::Decide(delivery, marker, me);
    if (d.step == cg::Step::kDeadLetter) break;
    if (d.step == cg::Step::kMarkThenRead) {
      marker = cg::Encode({delivery, 5, "core", me, d.stops});
    }
    REQUIRE(delivery < 10);
  }
  CHECK(delivery == 4);
}

TEST_CASE("a marker of the very process that finds it is read again, not counted",
          "[crash_guard]") {
  // The process lives: its lease was lost (or the marker's removal failed) while it read the
  // message, which did not kill it (a partition on nats-server 2.15.1 dead-lettered a good
  // event this way). Its count is kept.
  auto d = cg::Decide(3, cg::Encode({2, 5, "core-1", kMe, 1}), kMe);
  CHECK(d.step == cg::Step::kMarkThenRead);
  CHECK(d.stops == 1);
  CHECK_FALSE(d.stop_counted);
  CHECK(StepOf(1, cg::Encode({2, 5, "core-1", kMe, 0})) == cg::Step::kRead);
  const std::string me = cg::ThisProcess();
  CHECK(me == cg::ThisProcess());
  CHECK(me.find('@') != std::string::npos);
  auto m = cg::Decode(cg::Encode({2, 5, "core-1", me}));
  REQUIRE(m);
  CHECK(m->instance == "core-1");
  CHECK(m->process == me);
  CHECK(m->stops == 0);
  m = cg::Decode(cg::Encode({2, 5, "core-1", me, 1}));
  REQUIRE(m);
  CHECK(m->process == me);
  CHECK(m->stops == 1);
  // A marker written before the process was kept: no process, so never this one's.
  m = cg::Decode("2 5 core 1");
  REQUIRE(m);
  CHECK(m->instance == "core 1");
  CHECK(m->process.empty());
  CHECK(StepOf(3, "2 5 core 1") == cg::Step::kMarkThenRead);
  CHECK_FALSE(cg::Decode("2 5 core\t" + std::string(200, 'p')));
  CHECK_FALSE(cg::Decode("2 5 core\tp\tx"));
  CHECK_FALSE(cg::Decode("2 5 core\tp\t-1"));
  CHECK_FALSE(cg::Decode("2 5 core\tp\t"));
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
  CHECK(cg::Detail(cg::Encode({3, 1765000000000, "core-2", "7@1", 1}), 4) ==
        "delivery 4; instance core-2 began reading delivery 3 at unix ms 1765000000000 and never "
        "finished; 1 reader stopped on it before");
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
