#include "replayer/recent_seqs.h"

namespace replayer {

void RecentSeqs::Add(uint64_t seq) {
  if (!set_.insert(seq).second) return;
  order_.push_back(seq);
  if (order_.size() > capacity_) {
    set_.erase(order_.front());
    order_.pop_front();
  }
}

}  // namespace replayer
