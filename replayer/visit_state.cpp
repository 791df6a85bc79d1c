#include "replayer/visit_state.h"

#include <charconv>

#include "replayer/event.h"
#include "replayer/umami_reply.h"

namespace replayer {

const VisitState* VisitStates::Find(const LaneKey& lane, TimePoint now) {
  auto it = entries_.find(lane);
  if (it == entries_.end()) return nullptr;
  it->second.used = now;
  return &it->second.state;
}

bool VisitStates::Set(const LaneKey& lane, VisitState state, TimePoint now) {
  auto& e = entries_[lane];
  e.used = now;
  if (e.state.token == state.token && e.state.start_ms == state.start_ms) return false;
  e.state = std::move(state);
  return true;
}

size_t VisitStates::Sweep(TimePoint now) {
  std::erase_if(entries_, [&](const auto& kv) { return now - kv.second.used > idle_; });
  return entries_.size();
}

bool VisitStates::Continues(const VisitState& state, int64_t accepted_at_ms) {
  int64_t since = accepted_at_ms - state.start_ms;
  return !state.token.empty() && since >= 0 && since <= kVisitMs;
}

std::string VisitStates::TokenFor(const VisitState& state, int64_t accepted_at_ms) {
  return Continues(state, accepted_at_ms) ? state.token : std::string();
}

std::string VisitStates::Encode(const VisitState& state) {
  return "v2 " + std::to_string(state.start_ms) + " " + state.token;
}

VisitState VisitStates::Decode(std::string_view value) {
  VisitState s;
  if (value.substr(0, 3) != "v2 ") return s;
  value.remove_prefix(3);
  size_t space = value.find(' ');
  if (space == std::string_view::npos) return s;
  int64_t start = 0;
  auto [p, ec] = std::from_chars(value.data(), value.data() + space, start);
  if (ec != std::errc() || p != value.data() + space || start <= 0) return s;
  std::string_view token = value.substr(space + 1);
  if (!UsableToken(token)) return s;
  s.start_ms = start;
  s.token = std::string(token);
  return s;
}

std::string VisitKey(const std::string& website, const std::string& visitor) {
  return KvSafe(website) + "." + KvSafe(visitor);
}

}  // namespace replayer
