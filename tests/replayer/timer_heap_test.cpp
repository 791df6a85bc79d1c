#include "replayer/timer_heap.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

using replayer::TimerHeap;

namespace {

struct T {
  int at;
  uint64_t id;
  bool operator>(const T& o) const { return at > o.at; }
};

std::vector<int> Drain(TimerHeap<T>& h) {
  std::vector<int> at;
  while (!h.empty()) {
    at.push_back(h.top().at);
    h.pop();
  }
  return at;
}

}  // namespace

TEST_CASE("timer heap: the earliest first, whatever the order of pushes", "[timer_heap]") {
  TimerHeap<T> h;
  for (int at : {5, 1, 4, 1, 3}) h.push({at, 0});
  CHECK(h.size() == 5);
  CHECK(Drain(h) == std::vector<int>{1, 1, 3, 4, 5});
}

TEST_CASE("timer heap: compacts only beyond twice the live count and above the floor",
          "[timer_heap]") {
  constexpr size_t kFloor = TimerHeap<T>::kCompactFloor;
  TimerHeap<T> h;
  auto odd_live = [](const T& t) { return t.id % 2 == 1; };
  for (size_t i = 0; i < kFloor; ++i) h.push({static_cast<int>(i), i});
  CHECK(h.Compact(0, odd_live) == 0);  // at the floor: left alone
  h.push({-1, 1});
  // 1,025 entries: not more than twice a live count of 513, so nothing is dropped...
  CHECK(h.Compact(513, odd_live) == 0);
  CHECK(h.size() == kFloor + 1);
  // ...but with 512 live they are more than twice as many: the stale (even) ones go.
  CHECK(h.Compact(512, odd_live) == kFloor / 2);
  CHECK(h.size() == kFloor / 2 + 1);
  auto at = Drain(h);
  REQUIRE(at.size() == kFloor / 2 + 1);
  CHECK(at.front() == -1);  // still a heap: the earliest first
  for (size_t i = 1; i < at.size(); ++i) {
    CHECK(at[i - 1] < at[i]);
    CHECK(at[i] % 2 == 1);  // only the live ones are left
  }
}
