// Per-visitor lanes: one FIFO of held events per site + visitor; only the head is sent.
//
// Pure: no I/O, no clock. Events are opaque ids the engine assigns. The cap: while a lane's head
// is failing (its failures count against it), at most kMaxBehindFailing events wait behind it;
// the newest excess is returned for dead-lettering so one visitor cannot fill the in-flight limit.
// Not thread-safe: owned by the replayer's engine thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace replayer {

class Lanes {
 public:
  static constexpr size_t kMaxBehindFailing = 64;

  struct Added {
    bool is_head = false;            // the lane was empty: the event can be sent now
    std::vector<uint64_t> overflow;  // to dead-letter (may include the event just added)
  };
  Added Add(const std::string& lane, uint64_t id);

  std::optional<uint64_t> Head(const std::string& lane) const;
  // The head is finished (stored, dead-lettered, skipped): returns the next head, if any.
  std::optional<uint64_t> PopHead(const std::string& lane);
  // Removes a waiting (non-head) event.
  void Remove(const std::string& lane, uint64_t id);

  // The head's failure counted: from now on the cap applies; returns the excess to dead-letter.
  std::vector<uint64_t> MarkFailing(const std::string& lane);
  // The head's last failure did not count (an outage, a write fault): the cap no longer applies,
  // since no event is to blame for the wait.
  void ClearFailing(const std::string& lane);

  size_t lanes() const { return lanes_.size(); }
  size_t blocked() const { return failing_; }
  size_t waiting(const std::string& lane) const;  // behind the head
  bool failing(const std::string& lane) const;

 private:
  struct Lane {
    std::deque<uint64_t> ids;  // front = head
    bool failing = false;
  };
  std::vector<uint64_t> TrimExcess(Lane& lane);

  std::unordered_map<std::string, Lane> lanes_;
  size_t failing_ = 0;
};

}  // namespace replayer
