#include "common/log.h"

#include <catch2/catch.hpp>

using namespace std::chrono;

TEST_CASE("a repeated event is logged the first times, then once per period", "[log]") {
  common::LogLimiter limit(3, seconds(60));
  steady_clock::time_point t{};
  int64_t suppressed = -1;
  for (int i = 0; i < 3; ++i) {
    CHECK(limit.Allow(t + milliseconds(500 * i), &suppressed));
    CHECK(suppressed == 0);
  }
  // Every 500 ms for a minute: none logged until the minute since the last line is over.
  int logged = 0;
  for (int i = 3; i < 124; ++i) {
    if (limit.Allow(t + milliseconds(500 * i), &suppressed)) {
      ++logged;
      CHECK(milliseconds(500 * i) >= milliseconds(1000) + seconds(60));
      CHECK(suppressed == 119);  // occurrences 4..122 were left out
    }
  }
  CHECK(logged == 1);
  limit.Reset();
  CHECK(limit.Allow(t + seconds(70), &suppressed));
  CHECK(suppressed == 0);
}

TEST_CASE("a limited line says how many were left out, and nothing when none were", "[log]") {
  CHECK(common::LeftOut(0).empty());
  CHECK(common::LeftOut(-1).empty());
  CHECK(common::LeftOut(382) == " (382 more like it not logged)");
}
