// The visitors' visit state: the Umami cache token of the visit under way and when (in the
// events' own time, accepted_at) that visit began. In memory in front of the KV bucket
// visit_state, which is the shared truth (kept VISIT_STATE_TTL, read by a new leader).
//
// Why the visit's start: Umami 3.x never ends a visit whose events carry a token and a payload
// timestamp, and live traffic would have ended it: a live visit ends 30 minutes after it began.
// So a token is sent only with an event within 30 minutes of its visit's start, in event time;
// a later (or earlier) event goes without one and Umami begins a new visit from the event's own
// time (docs/replayer.md, "Visits").
// Pure: no I/O, time passed in. Not thread-safe: owned by the engine core.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "replayer/lane_key.h"

namespace replayer {

struct VisitState {
  std::string token;     // empty: no visit to continue
  int64_t start_ms = 0;  // accepted_at of the event that began the visit
};

class VisitStates {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  static constexpr int64_t kVisitMs = 30 * 60 * 1000;

  explicit VisitStates(std::chrono::milliseconds idle = std::chrono::minutes(10)) : idle_(idle) {}

  // nullptr: not known here (read the KV bucket first).
  const VisitState* Find(const LaneKey& lane, TimePoint now);
  // Returns true when the stored value changed (the caller writes it to the KV bucket).
  bool Set(const LaneKey& lane, VisitState state, TimePoint now);
  // Drops entries idle longer than `idle`; returns how many are left.
  size_t Sweep(TimePoint now);
  size_t size() const { return entries_.size(); }

  // The token an event accepted at `accepted_at_ms` may carry: the visit's, while the event is
  // within kVisitMs of the visit's start; else empty.
  static std::string TokenFor(const VisitState& state, int64_t accepted_at_ms);
  // TokenFor() would give the visit's token (without copying it).
  static bool Continues(const VisitState& state, int64_t accepted_at_ms);

  // The KV value: "v2 <start_ms> <token>". A value in another shape (the bare token an older
  // replayer wrote, anything unreadable) decodes to no visit: the next event begins one.
  static std::string Encode(const VisitState& state);
  static VisitState Decode(std::string_view value);

 private:
  struct Entry {
    VisitState state;
    TimePoint used;
  };
  std::chrono::milliseconds idle_;
  std::unordered_map<LaneKey, Entry, LaneKey::Hash> entries_;
};

// The KV key of a visitor's state: <site>.<visitor>, each made KV-safe.
std::string VisitKey(const std::string& website, const std::string& visitor);

}  // namespace replayer
