#include "metricswriter/decisions.h"

#include <algorithm>

namespace mw {

Millis Backoff::Next(double rand01) {
  double cap = static_cast<double>(max_.count());
  double full = std::min(cap, static_cast<double>(base_.count()) *
                                  static_cast<double>(1ULL << std::min(attempt_, 30)));
  ++attempt_;
  return Millis(static_cast<int64_t>(full / 2 + full / 2 * rand01));
}

std::vector<size_t> SplitByBytes(const std::vector<size_t>& sizes, size_t max_bytes) {
  std::vector<size_t> ends;
  size_t run = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (run > 0 && run + sizes[i] > max_bytes) {
      ends.push_back(i);
      run = 0;
    }
    run += sizes[i];
  }
  if (!sizes.empty()) ends.push_back(sizes.size());
  return ends;
}

Millis GroupPolicy::FetchWait(size_t batches, Clock::time_point first, Clock::time_point now,
                              Millis idle) const {
  if (batches == 0) return idle;
  auto left = std::chrono::duration_cast<Millis>(linger_ - (now - first));
  return std::max(left, kMinFetchWait);
}

Isolator::Isolator(size_t n) {
  if (n > 0) work_.push_back({0, n});
}

bool Isolator::Rejected() {
  Range r = work_.back();
  work_.pop_back();
  if (r.size() <= 1) return true;
  size_t mid = r.begin + r.size() / 2;
  work_.push_back({mid, r.end});    // tried second
  work_.push_back({r.begin, mid});  // tried first: stream order
  return false;
}

}  // namespace mw
