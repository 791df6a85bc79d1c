#include "replayer/lanes.h"

#include <algorithm>

namespace replayer {

std::vector<uint64_t> Lanes::TrimExcess(Lane& lane) {
  std::vector<uint64_t> out;
  while (lane.failing && lane.ids.size() > kMaxBehindFailing + 1) {
    out.push_back(lane.ids.back());
    lane.ids.pop_back();
  }
  std::reverse(out.begin(), out.end());  // oldest first, as they arrived
  return out;
}

Lanes::Added Lanes::Add(const std::string& key, uint64_t id) {
  Added r;
  auto& lane = lanes_[key];
  r.is_head = lane.ids.empty();
  lane.ids.push_back(id);
  r.overflow = TrimExcess(lane);
  return r;
}

std::optional<uint64_t> Lanes::Head(const std::string& key) const {
  auto it = lanes_.find(key);
  if (it == lanes_.end() || it->second.ids.empty()) return std::nullopt;
  return it->second.ids.front();
}

std::optional<uint64_t> Lanes::PopHead(const std::string& key) {
  auto it = lanes_.find(key);
  if (it == lanes_.end() || it->second.ids.empty()) return std::nullopt;
  it->second.ids.pop_front();
  if (it->second.failing) {
    it->second.failing = false;  // the next head has not failed yet
    --failing_;
  }
  if (it->second.ids.empty()) {
    lanes_.erase(it);
    return std::nullopt;
  }
  return it->second.ids.front();
}

void Lanes::Remove(const std::string& key, uint64_t id) {
  auto it = lanes_.find(key);
  if (it == lanes_.end()) return;
  auto& ids = it->second.ids;
  auto pos = std::find(ids.begin(), ids.end(), id);
  if (pos == ids.end() || pos == ids.begin()) return;  // the head leaves through PopHead
  ids.erase(pos);
}

std::vector<uint64_t> Lanes::MarkFailing(const std::string& key) {
  auto it = lanes_.find(key);
  if (it == lanes_.end()) return {};
  if (!it->second.failing) {
    it->second.failing = true;
    ++failing_;
  }
  return TrimExcess(it->second);
}

void Lanes::ClearFailing(const std::string& key) {
  auto it = lanes_.find(key);
  if (it == lanes_.end() || !it->second.failing) return;
  it->second.failing = false;
  --failing_;
}

size_t Lanes::waiting(const std::string& key) const {
  auto it = lanes_.find(key);
  return it == lanes_.end() || it->second.ids.empty() ? 0 : it->second.ids.size() - 1;
}

bool Lanes::failing(const std::string& key) const {
  auto it = lanes_.find(key);
  return it != lanes_.end() && it->second.failing;
}

}  // namespace replayer
