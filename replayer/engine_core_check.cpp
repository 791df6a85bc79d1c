// The engine core's account of itself: Summary() for a log line, SelfCheck() for the
// invariants the unit tests and the simulation check after every input (engine_core.h).
#include <algorithm>
#include <unordered_set>
#include <vector>

#include "replayer/engine_core_state.h"

namespace replayer {

std::string EngineCore::Summary() const {
  const auto& s = *s_;
  static const char* kNames[] = {"looking-up", "waiting", "ready",     "sending",
                                 "checking",   "backoff", "finishing", "dead-lettering",
                                 "dlq-wait",   "batched"};
  constexpr int kStages = 10;
  int per[kStages] = {0};
  int parked = 0, failing_heads = 0;
  for (const auto& [eid, h] : s.held) {
    ++per[static_cast<int>(h.stage)];
    parked += h.parked_write_fault ? 1 : 0;
    failing_heads += h.failures > 0 ? 1 : 0;
  }
  std::string out = "held " + std::to_string(s.held_count) + ":";
  for (int i = 0; i < kStages; ++i) {
    if (per[i]) out += std::string(" ") + kNames[i] + " " + std::to_string(per[i]);
  }
  out += "; parked " + std::to_string(parked) + ", with counted failures " +
         std::to_string(failing_heads) + "; lanes " + std::to_string(s.lanes.lanes()) +
         " (failing " + std::to_string(s.lanes.blocked()) + "); ready queue " +
         std::to_string(s.ready.size()) + "; fetching " + (s.fetching ? "yes" : "no");
  for (size_t i = 0; i < s.procs.size(); ++i) {
    const auto& p = s.procs[i];
    out += "; process " + std::to_string(i) + ": " +
           (p.health.Last() == ProcessHealth::State::kUp     ? "up"
            : p.health.Last() == ProcessHealth::State::kDown ? "down"
                                                             : "unknown") +
           (p.run.faulted() || s.shared_run.faulted() ? " write-fault" : "") + ", " +
           std::to_string(p.in_flight) + " sends" + (p.check_id ? ", checking" : "");
  }
  return out;
}

std::string EngineCore::SelfCheck() const {
  const auto& s = *s_;
  if (s.timers.size() > std::max(TimerHeap<Timer>::kCompactFloor, 2 * s.held.size())) {
    return std::to_string(s.timers.size()) + " timers kept for " + std::to_string(s.held.size()) +
           " held events";
  }
  if (static_cast<size_t>(s.held_count) != s.held.size()) {
    return "held count " + std::to_string(s.held_count) + " but " + std::to_string(s.held.size()) +
           " held";
  }
  int64_t bytes = 0;
  int sending = 0, riding = 0, batched = 0;
  std::vector<int> per_proc(s.procs.size(), 0);
  std::unordered_set<Ref> refs;
  for (const auto& [eid, h] : s.held) {
    bytes += h.bytes;
    if (!refs.insert(h.ref).second) return "two held events answer the same delivery";
    auto q = s.by_seq.find(h.seq);
    if (q == s.by_seq.end() || q->second != eid) return "held event without its seq index";
    if (h.op != 0 && EventOfOp(h.op) != eid) return "held event's operation names another event";
    if (h.stage == Stage::kSending) {
      ++sending;
      if (h.process < 0) return "a send without a process";
      ++per_proc[h.process];
      for (uint64_t id : h.batch) {
        auto b = s.held.find(id);
        if (b == s.held.end() || b->second.stage != Stage::kBatched ||
            !(b->second.lane == h.lane)) {
          return "a batch names an event that does not ride in it";
        }
        ++riding;
      }
    } else if (!h.batch.empty()) {
      return "an event not being sent holds a batch";
    }
    if (h.stage == Stage::kBatched) ++batched;
    if (!h.lane.empty() && s.lanes.failing(h.lane) &&
        s.lanes.waiting(h.lane) > Lanes::kMaxBehindFailing) {
      return "more than 64 events wait behind a failing head";
    }
  }
  if (bytes != s.held_bytes) return "held bytes do not add up";
  int parked_now = 0;
  for (const auto& [eid, h] : s.held) parked_now += h.parked_write_fault ? 1 : 0;
  if (parked_now != s.parked) return "parked events do not add up";
  if (sending != s.sends) return "sends in flight do not add up";
  if (riding != batched) return "events in batches do not add up";
  for (size_t i = 0; i < s.procs.size(); ++i) {
    if (per_proc[i] != s.procs[i].in_flight) return "a process's sends do not add up";
  }
  if (s.by_seq.size() != s.held.size()) {
    return "index sizes differ from the held events";
  }
  return "";
}

}  // namespace replayer
