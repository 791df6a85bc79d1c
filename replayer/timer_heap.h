// The engine core's timers: a min-heap of (due time, event, generation) whose stale entries are
// dropped in bulk once they outnumber the live ones.
//
// Why: an event re-arms its timer at each stage (the send's timeout 35 s ahead, the guard
// record's 10 s ahead, ...) and a new arm only makes the old entry stale; a plain heap drops a
// stale entry when it reaches the top, that is when its time comes. In a drain of 200,000
// events the dead entries took 18.9 MiB, and the resident size grew through a drain
// (docs/measured.md). Compact() keeps the heap within twice the live timers (at least
// kCompactFloor entries); each pass drops at least half of what it finds, so the work is O(1)
// amortised per push.
// Pure: no I/O. Not thread-safe: owned by the engine core.
#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <vector>

namespace replayer {

template <typename T>
class TimerHeap {
 public:
  // Below this many entries the heap is never compacted: a pass would cost more than it saves.
  static constexpr size_t kCompactFloor = 1024;

  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }
  const T& top() const { return heap_.front(); }

  void push(T t) {
    heap_.push_back(std::move(t));
    std::push_heap(heap_.begin(), heap_.end(), std::greater<>{});
  }
  void pop() {
    std::pop_heap(heap_.begin(), heap_.end(), std::greater<>{});
    heap_.pop_back();
  }

  // Drops every entry `live` rejects when the heap holds more than twice `live_count` (and more
  // than kCompactFloor); `live_count` bounds the entries that can be live. Returns how many went.
  template <typename Live>
  size_t Compact(size_t live_count, Live&& live) {
    if (heap_.size() <= kCompactFloor || heap_.size() <= 2 * live_count) return 0;
    size_t before = heap_.size();
    heap_.erase(std::remove_if(heap_.begin(), heap_.end(), [&](const T& t) { return !live(t); }),
                heap_.end());
    std::make_heap(heap_.begin(), heap_.end(), std::greater<>{});
    // Give back what the heap had grown to beyond twice what it holds now.
    if (heap_.capacity() > 2 * std::max(heap_.size(), kCompactFloor)) heap_.shrink_to_fit();
    return before - heap_.size();
  }

 private:
  std::vector<T> heap_;
};

}  // namespace replayer
