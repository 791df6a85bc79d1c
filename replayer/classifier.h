// The replayer's decisions after a send: outage or poison, the write-fault rule, and when to
// try again. Plain classes, no I/O; time is passed in, so tests control it.
// Not thread-safe: owned by the replayer's engine thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <optional>
#include <string>
#include <vector>

namespace replayer {

using Clock = std::chrono::steady_clock;
using TimePoint = Clock::time_point;
using std::chrono::milliseconds;

// What a health check of one Umami process found, cached for a few seconds so an outage does
// not become a probe storm.
class ProcessHealth {
 public:
  enum class State { kUnknown, kUp, kDown };
  explicit ProcessHealth(milliseconds cache_for = milliseconds(3000)) : cache_for_(cache_for) {}

  void RecordCheck(bool passed, TimePoint now);
  // kUnknown when there is no check result younger than the cache time.
  State Fresh(TimePoint now) const;
  // The last result, however old (a process last seen down takes no new sends).
  State Last() const { return last_; }
  bool check_running = false;

 private:
  milliseconds cache_for_;
  State last_ = State::kUnknown;
  TimePoint checked_at_{};
};

// The write-fault rule (SPEC §4): within one minute, at least 3 distinct visitors had a send
// fail on this process while its checks passed, and they are at least as many as the sends it
// stored. Latched until the process stores a send again.
class WriteFaultWindow {
 public:
  static constexpr milliseconds kWindow{60'000};
  static constexpr size_t kMinVisitors = 3;

  // Returns true when this failure put the process into the write-fault state.
  bool RecordFailure(const std::string& visitor, TimePoint now);
  // Returns true when this success ended a write fault (every parked event retries now).
  bool RecordStored(TimePoint now);
  bool faulted() const { return faulted_; }

 private:
  void Expire(TimePoint now);
  std::deque<std::pair<TimePoint, std::string>> failures_;
  // Stored sends per whole second of the window: bounded memory at any send rate.
  std::deque<std::pair<TimePoint, size_t>> stored_;
  size_t StoredCount() const;
  bool faulted_ = false;
};

// After a send failed and the checks decided.
struct Decision {
  enum class Kind {
    kOutage,      // the process is down: not counted; resend elsewhere or when it is back
    kWriteFault,  // the process cannot write: not counted; retry after kWriteFaultRetry
    kRetry,       // counted; retry after `delay`
    kDeadLetter,  // counted, and the 4th: to WEB_DLQ
  };
  Kind kind;
  milliseconds delay{0};
  int failures = 0;  // the event's counted failures after this one
};

inline constexpr int kMaxFailures = 4;
inline constexpr milliseconds kWriteFaultRetry{30'000};
inline constexpr const char* kFailedReason =
    "umami failed this event 4 times while its health checks passed";

// The delay before the next send after the n-th counted failure (n = 1..3): 4 s, 8 s, 24 s,
// so the 4th failure comes about 36 s after the first.
milliseconds RetryDelay(int failures);

// checks_passed: the process's health checks passed after the failure.
Decision Decide(bool checks_passed, bool write_fault, int failures_before);

}  // namespace replayer
