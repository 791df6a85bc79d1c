// Per-visitor lanes: one FIFO of held events per site + visitor; only the head is sent.
//
// Pure: no I/O, no clock. Events are opaque ids the engine assigns. The cap: while a lane's head
// is failing (its failures count against it), at most kMaxBehindFailing events wait behind it;
// the newest excess is returned for dead-lettering so one visitor cannot fill the in-flight limit.
// Not thread-safe: owned by the replayer's engine thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "replayer/lane_key.h"

namespace replayer {

class Lanes {
 public:
  static constexpr size_t kMaxBehindFailing = 64;

  struct Added {
    bool is_head = false;            // the lane was empty: the event can be sent now
    std::vector<uint64_t> overflow;  // to dead-letter (may include the event just added)
  };
  Added Add(const LaneKey& lane, uint64_t id);

  std::optional<uint64_t> Head(const LaneKey& lane) const;
  // The head is finished (stored, dead-lettered, skipped): returns the next head, if any.
  std::optional<uint64_t> PopHead(const LaneKey& lane);
  // Removes a waiting (non-head) event.
  void Remove(const LaneKey& lane, uint64_t id);
  // Up to `max` events behind the head, in order (the candidates of a batch with it).
  void Behind(const LaneKey& lane, size_t max, std::vector<uint64_t>& out) const;

  // The head's failure counted: from now on the cap applies; returns the excess to dead-letter.
  std::vector<uint64_t> MarkFailing(const LaneKey& lane);
  // The head's last failure did not count (an outage, a write fault): the cap no longer applies,
  // since no event is to blame for the wait.
  void ClearFailing(const LaneKey& lane);

  size_t lanes() const { return lanes_.size(); }
  size_t blocked() const { return failing_; }
  // The sites (a key's part before its first newline) of the failing lanes. O(lanes).
  size_t BlockedSites() const;
  size_t waiting(const LaneKey& lane) const;  // behind the head
  bool failing(const LaneKey& lane) const;

 private:
  // ids[head..] are the lane's events, ids[head] the head. A vector, not a deque: most lanes
  // hold one or two events and live for moments, and libstdc++'s deque allocates a 512-byte
  // block and its map for the first one.
  struct Lane {
    std::vector<uint64_t> ids;
    size_t head = 0;
    bool failing = false;
    size_t size() const { return ids.size() - head; }
  };
  std::vector<uint64_t> TrimExcess(Lane& lane);

  std::unordered_map<LaneKey, Lane, LaneKey::Hash> lanes_;
  size_t failing_ = 0;
};

}  // namespace replayer
