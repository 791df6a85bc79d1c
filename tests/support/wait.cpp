#include "tests/support/wait.h"

#include <algorithm>
#include <chrono>
#include <thread>

namespace testsupport {

namespace {

using Clock = std::chrono::steady_clock;

long long MsSince(Clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
}

}  // namespace

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
