// Waiting on conditions in tests, beyond testsupport::WaitFor (test_stack.h): a wait that checks
// an invariant at every poll, and a check that a condition holds throughout a period.
//
// Both poll from the calling thread, which runs the callables; they own nothing. They return ""
// on success, else a sentence saying what failed and after how long, so that
// `CHECK(testsupport::WaitKeeping(...) == "")` prints the reason in a failure report.
#pragma once

#include <functional>
#include <string>

namespace testsupport {

// Polls every poll_ms until `done` is true, checking `invariant` first at each poll (the last
// poll is at the deadline). Fails with "<invariant_what> broke after N ms" as soon as the
// invariant is false, or "<done_what> not reached within N ms" at the deadline.
std::string WaitKeeping(const std::function<bool()>& done, const std::string& done_what,
                        const std::function<bool()>& invariant, const std::string& invariant_what,
                        int timeout_ms, int poll_ms = 50);

// Polls `pred` every poll_ms for duration_ms (the first poll at once, the last at the end):
// "" when it held at every poll, else "<what> broke after N ms".
std::string HoldsFor(const std::function<bool()>& pred, const std::string& what, int duration_ms,
                     int poll_ms = 50);

}  // namespace testsupport
