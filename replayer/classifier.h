// The replayer's decisions after a send: outage or poison, the write-fault rule, and when to
// try again. Plain classes, no I/O; time is passed in, so tests control it.
// Not thread-safe: owned by the replayer's engine thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
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

  // order: the check's place in the engine's order of operations (its id: ids only grow), so
  // "began after a send" is exact even when both began in the same millisecond.
  void RecordCheck(bool passed, uint64_t order, TimePoint now);
  // kUnknown when there is no check result younger than the cache time.
  State Fresh(TimePoint now) const;
  // The result of a check that began after operation `since` (a send's id) and is younger than
  // the cache time, else kUnknown. A failed send is judged only by such a check: one that
  // began before the send may have seen the process before a fault began.
  State FreshSince(uint64_t since, TimePoint now) const;
  // The last result, however old (a process last seen down takes no new sends).
  State Last() const { return last_; }

 private:
  milliseconds cache_for_;
  State last_ = State::kUnknown;
  TimePoint checked_at_{};
  uint64_t order_ = 0;
};

// The write-fault rule (docs/replayer.md, "Write faults"), decided from what happened since a
// process's failures began: a run starts with the first failed send (checks passing) after the
// process last stored an event. When at least 3 distinct visitors failed in the run, within a
// minute of each other, and the process stored nothing since the run began, the process cannot
// write: failures stop counting against events. A store ends the run and the fault.
// Why not compare with the stores of the last minute (the rule this replaced): under busy traffic
// those are the stores made just before the fault began, and they outnumber the failing visitors
// until the events' fourth failures have dead-lettered them.
// A Umami answer that stored nothing (a bot) proves nothing either way and is not a store.
class WriteFaultRun {
 public:
  static constexpr milliseconds kWindow{60'000};
  static constexpr size_t kMinVisitors = 3;

  // Returns true when this failure made the process a write fault.
  bool RecordFailure(const std::string& visitor, TimePoint now);
  // A send that began at `sent_at` stored its event. It ends the run (returns true when it
  // ended a write fault: every parked event retries now) only if it began after the run's first
  // failure: one that began before may have been written before the fault began.
  bool RecordStored(TimePoint sent_at);
  // A write fault that has seen no store for kMaxFault ends by itself (returns true then): a
  // "write fault" that only poison heads made (a few of them failing while nothing else was
  // sent) would otherwise hold them for ever. Their failures count from then on; a real fault
  // is declared again by the next new events that fail.
  bool Expire(TimePoint now);
  bool faulted() const { return faulted_; }
  TimePoint since() const { return since_; }  // when the write fault began
  static constexpr milliseconds kMaxFault{20 * 60'000};
  // Distinct visitors failing in the current run's last minute (at most kMinVisitors are kept).
  size_t visitors() const { return recent_.size(); }

 private:
  // The last failure time of up to kMinVisitors distinct visitors of the run: enough to decide,
  // bounded whatever the traffic.
  std::vector<std::pair<std::string, TimePoint>> recent_;
  bool faulted_ = false;
  TimePoint since_{};
  TimePoint run_start_{};  // the first failure of the run under way (if recent_ is not empty)
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

// A website Umami answered "not found" for: its events go to WEB_DLQ without a send, and one of
// them is sent again after kSiteRecheck (a replayed one at once) to see whether Umami holds the
// site now (docs/replayer.md, "Unknown websites"). At most kMaxSiteBlocks sites are remembered:
// past that, each event of another unknown site is sent and dead-lettered at its answer.
inline constexpr milliseconds kSiteRecheck{300'000};
inline constexpr size_t kMaxSiteBlocks = 10'000;

// The delay before the next send after the n-th counted failure (n = 1..3): 4 s, 8 s, 24 s,
// so the 4th failure comes about 36 s after the first.
milliseconds RetryDelay(int failures);

// checks_passed: the process's health checks passed after the failure.
Decision Decide(bool checks_passed, bool write_fault, int failures_before);

}  // namespace replayer
