#include "common/js_reach.h"

#include <algorithm>
#include <random>

#include "common/server_version.h"

namespace common {

void JetStreamReach::Answered(Clock::time_point) { silent_since_ = {}; }

void JetStreamReach::Unanswered(Clock::time_point sent) {
  if (silent_since_ == Clock::time_point{}) silent_since_ = sent;
}

void JetStreamReach::Disconnected() { silent_since_ = {}; }

std::chrono::milliseconds JetStreamReach::SilentFor(Clock::time_point now) const {
  if (silent_since_ == Clock::time_point{} || now < silent_since_) return {};
  return std::chrono::duration_cast<std::chrono::milliseconds>(now - silent_since_);
}

bool JetStreamReach::Lost(Clock::time_point now) const {
  return silent_since_ != Clock::time_point{} && SilentFor(now) >= limit_;
}

namespace {

// The same server: host and port (server_version::EndpointOf), else the same text.
bool SameServer(std::string_view a, std::string_view b) {
  auto ea = server_version::EndpointOf(a), eb = server_version::EndpointOf(b);
  if (ea && eb) return ea->host == eb->host && ea->port == eb->port;
  return a == b;
}

}  // namespace

std::vector<std::string> ServersAvoiding(const std::vector<std::string>& urls,
                                         std::string_view avoid, uint64_t seed) {
  std::vector<std::string> first, last;
  for (const auto& u : urls) (!avoid.empty() && SameServer(u, avoid) ? last : first).push_back(u);
  std::mt19937_64 rng(seed);
  std::shuffle(first.begin(), first.end(), rng);
  first.insert(first.end(), last.begin(), last.end());
  return first;
}

}  // namespace common
