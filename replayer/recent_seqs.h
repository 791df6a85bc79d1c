// The stream sequences this engine finished last (acked: stored, skipped or dead-lettered).
//
// Why: the intake reads the duplicate guard before the engine sees a redelivery, so a message
// whose send finished between that read and the engine's turn would pass as new and be sent a
// second time. The engine remembers what it finished and acks such a redelivery instead. The
// guard still covers everything older and every other process; this only closes that window.
// Pure: no I/O. Not thread-safe: owned by the replayer's engine thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <unordered_set>

namespace replayer {

class RecentSeqs {
 public:
  explicit RecentSeqs(size_t capacity) : capacity_(capacity == 0 ? 1 : capacity) {}

  // Remembers seq; the oldest is forgotten once more than capacity are held.
  void Add(uint64_t seq);
  bool Contains(uint64_t seq) const { return set_.count(seq) != 0; }
  size_t size() const { return order_.size(); }

 private:
  size_t capacity_;
  std::deque<uint64_t> order_;
  std::unordered_set<uint64_t> set_;
};

}  // namespace replayer
