#include "common/lease.h"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace common {

std::string LeaseHolder::ToJson() const {
  nlohmann::json j = {{"instance", instance},
                      {"host", host},
                      {"pid", pid},
                      {"started_unix_ms", started_unix_ms},
                      {"acquired_unix_ms", acquired_unix_ms}};
  if (!status.empty()) j["status"] = status;
  return j.dump();
}

std::optional<LeaseHolder> LeaseHolder::FromJson(const std::string& text) {
  auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return std::nullopt;
  LeaseHolder h;
  auto str = [&](const char* k, std::string* out) {
    auto it = j.find(k);
    if (it == j.end() || !it->is_string()) return false;
    *out = it->get<std::string>();
    return true;
  };
  auto num = [&](const char* k, int64_t* out) {
    auto it = j.find(k);
    if (it == j.end() || !it->is_number_integer()) return false;
    *out = it->get<int64_t>();
    return true;
  };
  if (!str("instance", &h.instance) || !str("host", &h.host) || !num("pid", &h.pid) ||
      !num("started_unix_ms", &h.started_unix_ms) ||
      !num("acquired_unix_ms", &h.acquired_unix_ms)) {
    return std::nullopt;
  }
  if (auto it = j.find("status"); it != j.end() && it->is_object()) {
    for (const auto& [k, v] : it->items()) {
      if (v.is_number_integer() && k.size() <= 64) h.status[k] = v.get<int64_t>();
    }
  }
  return h;
}

std::string LeaseHolder::Describe() const {
  return instance + " (" + host + ", pid " + std::to_string(pid) + ")";
}

LeaseTiming LeaseTiming::ForTtl(std::chrono::milliseconds ttl) {
  using std::chrono::milliseconds;
  LeaseTiming t;
  t.ttl = ttl;
  t.renew_every = ttl / 3;
  t.margin = ttl / 5;
  t.poll = std::clamp(ttl / 10, milliseconds(100), milliseconds(1'000));
  return t;
}

LeaseDecision::Action LeaseDecision::Next(LeaseClock::time_point now) {
  if (leader_ && now >= valid_until_) Lose();
  if (now < next_op_) return {};
  if (leader_) return {Op::kRenew, revision_};
  return {Op::kCreate, 0};
}

void LeaseDecision::OnCreated(LeaseClock::time_point sent, uint64_t revision) {
  if (!leader_) change_ = Change::kGained;
  leader_ = true;
  revision_ = revision;
  valid_until_ = sent + t_.ttl - t_.margin;
  next_op_ = sent + t_.renew_every;
}

void LeaseDecision::OnCreateRefused(LeaseClock::time_point now) { next_op_ = now + t_.poll; }

void LeaseDecision::OnRenewed(LeaseClock::time_point sent, uint64_t revision) {
  // Only a leader renews; a renewal answered after the deadline passed does not revive it
  // (the process may have been paused, and a follower may lead by now).
  if (!leader_ || sent >= valid_until_) return;
  revision_ = revision;
  valid_until_ = sent + t_.ttl - t_.margin;
  next_op_ = sent + t_.renew_every;
}

void LeaseDecision::OnRenewFailed(LeaseClock::time_point now) {
  Lose();
  next_op_ = now + t_.poll;
}

void LeaseDecision::Resign() { Lose(); }

LeaseDecision::Change LeaseDecision::TakeChange() {
  Change c = change_;
  change_ = Change::kNone;
  return c;
}

void LeaseDecision::Lose() {
  if (leader_) change_ = Change::kLost;
  leader_ = false;
  revision_ = 0;
  valid_until_ = {};
}

}  // namespace common
