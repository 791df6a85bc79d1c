#include "metricswriter/byte_budget.h"

#include <algorithm>

namespace mw {

ByteBudget::Fetch ByteBudget::NextFetch(int64_t held) const {
  Fetch f;
  if (next_too_large_) {
    // Only with nothing else held: the message may be bigger than the whole limit.
    if (held <= 0) {
      f.fetch = true;
      f.alone = true;
    }
    return f;
  }
  const int64_t room = limit_ - std::max<int64_t>(held, 0);
  const auto bytes = static_cast<int64_t>(static_cast<double>(room) / (1.0 + expansion_));
  if (held <= 0) {
    f.fetch = true;
    f.max_bytes = std::max<int64_t>(bytes, 1);
  } else if (bytes >= kMinFetchBytes) {
    f.fetch = true;
    f.max_bytes = bytes;
  }
  return f;
}

bool ByteBudget::MayDecode(int64_t held, int64_t bytes) const {
  if (held <= bytes) return true;  // nothing else held: any size goes, alone
  return held + static_cast<int64_t>(static_cast<double>(bytes) * expansion_) <= limit_;
}

void ByteBudget::Decoded(int64_t bytes, int64_t decoded) {
  const double ratio =
      static_cast<double>(decoded) / static_cast<double>(std::max<int64_t>(bytes, 1));
  expansion_ = ratio > expansion_ ? ratio : std::max(0.1, 0.95 * expansion_ + 0.05 * ratio);
}

int64_t ByteBudget::Estimate(int64_t bytes) const {
  return bytes + static_cast<int64_t>(static_cast<double>(bytes) * expansion_);
}

}  // namespace mw
