// The condition waits of tests/support/wait.h, driven by fake counts: milliseconds, not minutes.
// Each case's verdict comes from the count's shape, not from how fast this machine polls: a
// count that rises at every call never stalls, however late a poll comes.
#include "tests/support/wait.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>

using testsupport::WaitProgressing;

namespace {

using Clock = std::chrono::steady_clock;

using testsupport::MsSince;

}  // namespace

TEST_CASE("wait progressing: done at once is done", "[wait]") {
  int calls = 0;
  CHECK(WaitProgressing([] { return true; }, [&] { return int64_t{++calls}; }, "drain", 0, 0) ==
        "");
  CHECK(calls == 0);  // done is asked first: a count nobody needs is not read
}

TEST_CASE("wait progressing: a slow drain that keeps moving outlasts its stall time", "[wait]") {
  // One message removed per poll, 60 polls 5 ms apart: about 300 ms in all, against a stall time
  // of 40 ms, the fixed deadline a WaitFor(…, 40) would have failed at.
  int64_t removed = 0;
  const auto t0 = Clock::now();
  CHECK(WaitProgressing([&] { return removed >= 60; }, [&] { return ++removed; }, "drain", 40,
                        60'000, 5) == "");
  CHECK(removed == 60);
  CHECK(MsSince(t0) >= 40);
}

TEST_CASE("wait progressing: a count that stops fails after the stall time, with the count",
          "[wait]") {
  // 1, 2, 3, then 3 for ever: 40 ms after it reached 3, not at the cap.
  int64_t calls = 0;
  const auto t0 = Clock::now();
  const std::string why =
      WaitProgressing([] { return false; }, [&] { return std::min<int64_t>(++calls, 3); },
                      "WEB_EVENTS drained", 40, 60'000, 5);
  CHECK(why == "WEB_EVENTS drained made no progress for 40 ms (at 3)");
  CHECK(calls > 3);
  CHECK(MsSince(t0) >= 40);
  CHECK(MsSince(t0) < 30'000);
}

TEST_CASE("wait progressing: a count that falls back is no progress", "[wait]") {
  // 5, 4, 5, 4, …: never above 5, so the 400 ms run from the first reading. The stall time is
  // long beside the 5 ms polls so that the count falls back and rises again (a third call) even
  // on a loaded machine: with 40 ms, one late sleep under the sanitizers left two calls.
  int64_t calls = 0;
  std::string why = WaitProgressing([] { return false; }, [&] { return 4 + (++calls % 2); },
                                    "drain", 400, 60'000, 5);
  CHECK_THAT(why, Catch::StartsWith("drain made no progress for 400 ms (at "));
  CHECK(calls > 2);
}

TEST_CASE("wait progressing: the cap ends a wait that moves but never arrives", "[wait]") {
  int64_t count = 0;
  const auto t0 = Clock::now();
  CHECK(WaitProgressing([] { return false; }, [&] { return ++count; }, "drain", 40, 120, 5) ==
        "drain not reached within the cap 120 ms");
  CHECK(MsSince(t0) >= 120);
}

TEST_CASE("wait progressing: done at the last poll is done", "[wait]") {
  // The count never moves; done turns true only at the poll of the stall's end.
  const auto t0 = Clock::now();
  CHECK(WaitProgressing([&] { return MsSince(t0) >= 40; }, [] { return int64_t{7}; }, "drain", 40,
                        60'000, 100) == "");
}
