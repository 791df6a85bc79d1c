#include "replayer/classifier.h"

#include <set>

namespace replayer {

void ProcessHealth::RecordCheck(bool passed, TimePoint now) {
  last_ = passed ? State::kUp : State::kDown;
  checked_at_ = now;
}

ProcessHealth::State ProcessHealth::Fresh(TimePoint now) const {
  if (last_ == State::kUnknown || now - checked_at_ > cache_for_) return State::kUnknown;
  return last_;
}

void WriteFaultWindow::Expire(TimePoint now) {
  while (!failures_.empty() && now - failures_.front().first > kWindow) failures_.pop_front();
  while (!stored_.empty() && now - stored_.front().first > kWindow) stored_.pop_front();
}

size_t WriteFaultWindow::StoredCount() const {
  size_t n = 0;
  for (const auto& [at, count] : stored_) n += count;
  return n;
}

bool WriteFaultWindow::RecordFailure(const std::string& visitor, TimePoint now) {
  Expire(now);
  failures_.emplace_back(now, visitor);
  if (faulted_) return false;
  std::set<std::string> distinct;
  for (const auto& f : failures_) distinct.insert(f.second);
  if (distinct.size() >= kMinVisitors && distinct.size() >= StoredCount()) {
    faulted_ = true;
    return true;
  }
  return false;
}

bool WriteFaultWindow::RecordStored(TimePoint now) {
  Expire(now);
  if (!stored_.empty() && now - stored_.back().first < milliseconds(1000)) {
    stored_.back().second++;
  } else {
    stored_.emplace_back(now, 1);
  }
  bool ended = faulted_;
  faulted_ = false;
  if (ended) failures_.clear();
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
