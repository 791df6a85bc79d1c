#include "replayer/lanes.h"

#include <catch2/catch.hpp>
#include <deque>
#include <optional>

using replayer::Lanes;

TEST_CASE("one lane per visitor, only the head goes, in order", "[lanes]") {
  Lanes l;
  CHECK(l.Add("a", 1).is_head);
  CHECK_FALSE(l.Add("a", 2).is_head);
  CHECK(l.Add("b", 3).is_head);
  CHECK(l.Head("a") == 1u);
  CHECK(l.PopHead("a") == 2u);
  CHECK(l.PopHead("a") == std::nullopt);
  CHECK(l.lanes() == 1);
  CHECK(l.Head("b") == 3u);
}

TEST_CASE("the cap applies only behind a failing head", "[lanes]") {
  Lanes l;
  for (uint64_t i = 1; i <= 100; ++i) CHECK(l.Add("a", i).overflow.empty());
  CHECK(l.waiting("a") == 99);
  // The head fails: everything beyond 64 waiting goes, the newest first out of the lane.
  auto excess = l.MarkFailing("a");
  REQUIRE(excess.size() == 35);
  CHECK(excess.front() == 66);
  CHECK(excess.back() == 100);
  CHECK(l.waiting("a") == 64);
  CHECK(l.blocked() == 1);
  // While failing, each newcomer beyond the cap overflows at once.
  auto added = l.Add("a", 101);
  REQUIRE(added.overflow.size() == 1);
  CHECK(added.overflow[0] == 101);
  // Other visitors are untouched.
  CHECK(l.Add("b", 200).is_head);
  // The failing head leaves: the lane is no longer blocked.
  CHECK(l.PopHead("a") == 2u);
  CHECK(l.blocked() == 0);
  CHECK(l.Add("a", 102).overflow.empty());
}

TEST_CASE("removing a waiting event keeps the head", "[lanes]") {
  Lanes l;
  l.Add("a", 1);
  l.Add("a", 2);
  l.Add("a", 3);
  l.Remove("a", 2);
  l.Remove("a", 1);  // the head cannot be removed this way
  CHECK(l.Head("a") == 1u);
  CHECK(l.PopHead("a") == 3u);
}

TEST_CASE("a failure that does not count lifts the cap until the head counts one again",
          "[lanes]") {
  Lanes l;
  for (uint64_t i = 1; i <= 10; ++i) l.Add("a", i);
  CHECK(l.MarkFailing("a").empty());
  CHECK(l.blocked() == 1);
  // An outage or a write fault: nothing is to blame, the visitor's events may queue up.
  l.ClearFailing("a");
  CHECK(l.blocked() == 0);
  for (uint64_t i = 11; i <= 100; ++i) CHECK(l.Add("a", i).overflow.empty());
  CHECK(l.waiting("a") == 99);
  l.ClearFailing("a");  // twice, or on a lane that was not failing: no change
  l.ClearFailing("nobody");
  CHECK(l.blocked() == 0);
  // The head fails again with the checks passing: the cap is back.
  CHECK(l.MarkFailing("a").size() == 35);
  CHECK(l.blocked() == 1);
}

TEST_CASE("a lane that never empties keeps its order and its removals", "[lanes]") {
  // The lane drops its finished front now and then (it would grow for ever otherwise): checked
  // against a plain queue after every step, through thousands of adds, pops and removals
  // without the lane ever running empty.
  Lanes l;
  std::deque<uint64_t> model;
  uint64_t next = 1, rng = 12345;
  auto roll = [&rng](uint64_t n) {
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (rng >> 33) % n;
  };
  for (int step = 0; step < 5000; ++step) {
    auto r = roll(10);
    if (model.size() < 2 || r < 4) {
      CHECK(l.Add("a", next).is_head == model.empty());
      model.push_back(next++);
    } else if (r < 8) {
      model.pop_front();
      auto after = l.PopHead("a");
      REQUIRE(after.has_value() == !model.empty());
      if (after) REQUIRE(*after == model.front());
    } else {  // a waiting event leaves from the middle
      auto at = 1 + roll(model.size() - 1);
      l.Remove("a", model[at]);
      model.erase(model.begin() + static_cast<std::ptrdiff_t>(at));
    }
    REQUIRE(l.Head("a") == (model.empty() ? std::nullopt : std::optional(model.front())));
    REQUIRE(l.waiting("a") == (model.empty() ? 0 : model.size() - 1));
  }
  while (!model.empty()) {
    model.pop_front();
    auto after = l.PopHead("a");
    REQUIRE(after == (model.empty() ? std::nullopt : std::optional(model.front())));
  }
  CHECK(l.lanes() == 0);
}

TEST_CASE("lanes: the sites of the blocked visitors", "[lanes]") {
  replayer::Lanes l;
  CHECK(l.BlockedSites() == 0);
  l.Add("s1\nv1", 1);
  l.Add("s1\nv2", 2);
  l.Add("s2\nv1", 3);
  l.MarkFailing("s1\nv1");
  CHECK(l.BlockedSites() == 1);
  l.MarkFailing("s1\nv2");
  CHECK(l.BlockedSites() == 1);
  l.MarkFailing("s2\nv1");
  CHECK(l.blocked() == 3);
  CHECK(l.BlockedSites() == 2);
  l.ClearFailing("s1\nv1");
  l.ClearFailing("s1\nv2");
  CHECK(l.BlockedSites() == 1);
}
