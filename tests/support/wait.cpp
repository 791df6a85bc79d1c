#include "tests/support/wait.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <thread>

namespace testsupport {

namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

int64_t MsSince(Clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
}

double SecondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::string WaitKeeping(const std::function<bool()>& done, const std::string& done_what,
                        const std::function<bool()>& invariant, const std::string& invariant_what,
                        int timeout_ms, int poll_ms) {
  const auto t0 = Clock::now();
  const auto deadline = t0 + std::chrono::milliseconds(timeout_ms);
  while (true) {
    const bool last = Clock::now() >= deadline;
    if (!invariant()) return invariant_what + " broke after " + std::to_string(MsSince(t0)) + " ms";
    if (done()) return "";
    if (last) return done_what + " not reached within " + std::to_string(timeout_ms) + " ms";
    // The poll interval, not a synchronisation: the next poll reads the conditions again.
    std::this_thread::sleep_until(
        std::min(deadline, Clock::now() + std::chrono::milliseconds(poll_ms)));
  }
}

std::string WaitProgressing(const std::function<bool()>& done,
                            const std::function<int64_t()>& progress, const std::string& what,
                            int stall_ms, int cap_ms, int poll_ms) {
  const auto t0 = Clock::now();
  const auto cap = t0 + std::chrono::milliseconds(cap_ms);
  auto moved_at = t0;
  std::optional<int64_t> highest;
  while (true) {
    if (done()) return "";
    // Read before the stall is judged: a poll that comes late (the machine busy) still sees the
    // work done meanwhile as progress.
    const int64_t at = progress();
    const auto now = Clock::now();
    if (!highest || at > *highest) {
      if (highest) moved_at = now;
      highest = at;
    }
    const auto stall_end = moved_at + std::chrono::milliseconds(stall_ms);
    if (now >= stall_end) {
      return what + " made no progress for " + std::to_string(stall_ms) + " ms (at " +
             std::to_string(at) + ")";
    }
    if (now >= cap) return what + " not reached within the cap " + std::to_string(cap_ms) + " ms";
    // The poll interval, not a synchronisation: the next poll reads the conditions again.
    std::this_thread::sleep_until(
        std::min({cap, stall_end, Clock::now() + std::chrono::milliseconds(poll_ms)}));
  }
}

std::string HoldsFor(const std::function<bool()>& pred, const std::string& what, int duration_ms,
                     int poll_ms) {
  const auto t0 = Clock::now();
  const auto end = t0 + std::chrono::milliseconds(duration_ms);
  while (true) {
    const bool last = Clock::now() >= end;
    if (!pred()) return what + " broke after " + std::to_string(MsSince(t0)) + " ms";
    if (last) return "";
    std::this_thread::sleep_until(std::min(end, Clock::now() + std::chrono::milliseconds(poll_ms)));
  }
}

}  // namespace testsupport
