#include "replayer/lanes.h"

#include <algorithm>
#include <string_view>
#include <unordered_set>

namespace replayer {

std::vector<uint64_t> Lanes::TrimExcess(Lane& lane) {
  std::vector<uint64_t> out;
  while (lane.failing && lane.size() > kMaxBehindFailing + 1) {
    out.push_back(lane.ids.back());
    lane.ids.pop_back();
  }
  std::reverse(out.begin(), out.end());  // oldest first, as they arrived
  return out;
}

Lanes::Added Lanes::Add(const LaneKey& key, uint64_t id) {
  Added r;
  auto& lane = lanes_[key];
  r.is_head = lane.size() == 0;
  lane.ids.push_back(id);
  r.overflow = TrimExcess(lane);
  return r;
}

std::optional<uint64_t> Lanes::Head(const LaneKey& key) const {
  auto it = lanes_.find(key);
  if (it == lanes_.end() || it->second.size() == 0) return std::nullopt;
  return it->second.ids[it->second.head];
}

std::optional<uint64_t> Lanes::PopHead(const LaneKey& key) {
  auto it = lanes_.find(key);
  if (it == lanes_.end() || it->second.size() == 0) return std::nullopt;
  Lane& lane = it->second;
  ++lane.head;
  if (lane.failing) {
    lane.failing = false;  // the next head has not failed yet
    --failing_;
  }
  if (lane.size() == 0) {
    lanes_.erase(it);
    return std::nullopt;
  }
  // A lane that never empties would grow for ever: drop the finished front now and then.
  if (lane.head >= 32 && lane.head * 2 >= lane.ids.size()) {
    lane.ids.erase(lane.ids.begin(), lane.ids.begin() + static_cast<std::ptrdiff_t>(lane.head));
    lane.head = 0;
  }
  return lane.ids[lane.head];
}

void Lanes::Remove(const LaneKey& key, uint64_t id) {
  auto it = lanes_.find(key);
  if (it == lanes_.end() || it->second.size() == 0) return;
  Lane& lane = it->second;
  auto first = lane.ids.begin() + static_cast<std::ptrdiff_t>(lane.head);
  auto pos = std::find(first, lane.ids.end(), id);
  if (pos == lane.ids.end() || pos == first) return;  // the head leaves through PopHead
  lane.ids.erase(pos);
}

void Lanes::Behind(const LaneKey& key, size_t max, std::vector<uint64_t>& out) const {
  out.clear();
  auto it = lanes_.find(key);
  if (it == lanes_.end()) return;
  const Lane& lane = it->second;
  for (size_t i = lane.head + 1; i < lane.ids.size() && out.size() < max; ++i) {
    out.push_back(lane.ids[i]);
  }
}

std::vector<uint64_t> Lanes::MarkFailing(const LaneKey& key) {
  auto it = lanes_.find(key);
  if (it == lanes_.end()) return {};
  if (!it->second.failing) {
    it->second.failing = true;
    ++failing_;
  }
  return TrimExcess(it->second);
}

void Lanes::ClearFailing(const LaneKey& key) {
  auto it = lanes_.find(key);
  if (it == lanes_.end() || !it->second.failing) return;
  it->second.failing = false;
  --failing_;
}

size_t Lanes::waiting(const LaneKey& key) const {
  auto it = lanes_.find(key);
  return it == lanes_.end() || it->second.size() == 0 ? 0 : it->second.size() - 1;
}

bool Lanes::failing(const LaneKey& key) const {
  auto it = lanes_.find(key);
  return it != lanes_.end() && it->second.failing;
}

size_t Lanes::BlockedSites() const {
  if (failing_ == 0) return 0;
  std::unordered_set<std::string_view> sites;
  for (const auto& [key, lane] : lanes_) {
    if (!lane.failing) continue;
    std::string_view k = key.str();
    sites.insert(k.substr(0, k.find('\n')));
  }
  return sites.size();
}

}  // namespace replayer
