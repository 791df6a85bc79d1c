// Waiting on conditions in tests, beyond testsupport::WaitFor (test_stack.h): a wait that checks
// an invariant at every poll, a wait that gives up only when the work stops moving, and a check
// that a condition holds throughout a period.
//
// All poll from the calling thread, which runs the callables; they own nothing. They return ""
// on success, else a sentence saying what failed and after how long, so that
// `CHECK(testsupport::WaitKeeping(...) == "")` prints the reason in a failure report.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

namespace testsupport {

// The time from t0 to now on the steady clock, in whole milliseconds or in seconds.
int64_t MsSince(std::chrono::steady_clock::time_point t0);
double SecondsSince(std::chrono::steady_clock::time_point t0);

// Polls every poll_ms until `done` is true, checking `invariant` first at each poll (the last
// poll is at the deadline). Fails with "<invariant_what> broke after N ms" as soon as the
// invariant is false, or "<done_what> not reached within N ms" at the deadline.
std::string WaitKeeping(const std::function<bool()>& done, const std::string& done_what,
                        const std::function<bool()>& invariant, const std::string& invariant_what,
                        int timeout_ms, int poll_ms = 50);

// Polls every poll_ms until `done` is true, for work whose pace the machine sets (a drain on a
// loaded CI host): it fails when the work stops, not when it is slow. `progress` returns a count
// that rises as the work is done (for a drain, the messages removed so far); each poll calls
// `done`, then `progress`, so `progress` may reuse what `done` read. Fails with "<what> made no
// progress for N ms (at X)" when the count has not risen above its highest value for stall_ms
// (the poll at that moment included), or "<what> not reached within the cap N ms" at cap_ms
// however it moved. The last poll is at whichever comes first.
std::string WaitProgressing(const std::function<bool()>& done,
                            const std::function<int64_t()>& progress, const std::string& what,
                            int stall_ms, int cap_ms, int poll_ms = 50);

// Polls `pred` every poll_ms for duration_ms (the first poll at once, the last at the end):
// "" when it held at every poll, else "<what> broke after N ms".
std::string HoldsFor(const std::function<bool()>& pred, const std::string& what, int duration_ms,
                     int poll_ms = 50);

}  // namespace testsupport
