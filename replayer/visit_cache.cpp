#include "replayer/visit_cache.h"

#include "replayer/event.h"

namespace replayer {

std::optional<std::string> VisitCache::Lookup(const std::string& lane) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(lane);
  if (it == entries_.end()) return std::nullopt;
  it->second.used = std::chrono::steady_clock::now();
  return it->second.token;
}

bool VisitCache::Set(const std::string& lane, const std::string& token) {
  std::lock_guard lock(mu_);
  auto& e = entries_[lane];
  e.used = std::chrono::steady_clock::now();
  if (e.token == token) return false;
  e.token = token;
  return true;
}

void VisitCache::Sweep() {
  auto now = std::chrono::steady_clock::now();
  std::lock_guard lock(mu_);
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (now - it->second.used > idle_)
      it = entries_.erase(it);
    else
      ++it;
  }
}

size_t VisitCache::size() {
  std::lock_guard lock(mu_);
  return entries_.size();
}

std::string VisitKey(const std::string& website, const std::string& visitor) {
  return KvSafe(website) + "." + KvSafe(visitor);
}

}  // namespace replayer
