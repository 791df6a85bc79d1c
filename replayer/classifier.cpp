#include "replayer/classifier.h"

#include <vector>

namespace replayer {

void ProcessHealth::RecordCheck(bool passed, TimePoint started, TimePoint now) {
  last_ = passed ? State::kUp : State::kDown;
  checked_at_ = now;
  started_at_ = started;
}

ProcessHealth::State ProcessHealth::FreshSince(TimePoint since, TimePoint now) const {
  if (started_at_ <= since) return State::kUnknown;  // begun with the send: maybe before it
  return Fresh(now);
}

ProcessHealth::State ProcessHealth::Fresh(TimePoint now) const {
  if (last_ == State::kUnknown || now - checked_at_ > cache_for_) return State::kUnknown;
  return last_;
}

bool WriteFaultRun::RecordFailure(const std::string& visitor, TimePoint now) {
  if (faulted_) return false;
  // Failures more than a minute old belong to no run worth judging: drop them.
  std::erase_if(recent_, [&](const auto& f) { return now - f.second > kWindow; });
  if (recent_.empty()) run_start_ = now;
  for (auto& f : recent_) {
    if (f.first == visitor) {
      f.second = now;
      return false;
    }
  }
  recent_.emplace_back(visitor, now);
  if (recent_.size() < kMinVisitors) return false;
  faulted_ = true;
  since_ = now;
  return true;
}

bool WriteFaultRun::Expire(TimePoint now) {
  if (!faulted_ || now - since_ < kMaxFault) return false;
  faulted_ = false;
  recent_.clear();
  return true;
}

bool WriteFaultRun::RecordStored(TimePoint sent_at) {
  if ((faulted_ || !recent_.empty()) && sent_at < run_start_) return false;
  bool ended = faulted_;
  faulted_ = false;
  recent_.clear();  // the run is over: the process writes
  return ended;
}

milliseconds RetryDelay(int failures) {
  switch (failures) {
    case 1:
      return milliseconds(4'000);
    case 2:
      return milliseconds(8'000);
    default:
      return milliseconds(24'000);
  }
}

Decision Decide(bool checks_passed, bool write_fault, int failures_before) {
  if (!checks_passed) return {Decision::Kind::kOutage, milliseconds(0), failures_before};
  if (write_fault) return {Decision::Kind::kWriteFault, kWriteFaultRetry, failures_before};
  int failures = failures_before + 1;
  if (failures >= kMaxFailures) return {Decision::Kind::kDeadLetter, milliseconds(0), failures};
  return {Decision::Kind::kRetry, RetryDelay(failures), failures};
}

}  // namespace replayer
