// Private to the simulator's world (sim_*.cpp).
#pragma once

#include "tests/sim/sim_world.h"

namespace sim {

struct World::Msg {
  uint64_t seq = 0;
  int index = 0;  // into events_
  std::string body;
  bool acked = false;
  bool out = false;  // delivered and neither acked nor due again
  uint64_t deliveries = 0;
  int holder = -1;
  uint64_t gen = 0;  // ack-wait timers armed before the last delivery or touch are ignored
  bool progress_lost = false;  // its last in-progress ack was lost (Fault::kAcksLost)
  // Readers that stopped inside this message's marked window (the ground truth the crash-loop
  // guard's decision is checked against), and whether one was killed from outside there.
  int marked_stops = 0;
  bool window_killed = false;
};

struct World::Fetch {
  int inst;
  uint64_t epoch;
  int max_messages;
  uint64_t serial;
};

struct World::UmamiProc {
  uint64_t requests = 0;
};

struct RefInfo {
  uint64_t seq;
  uint64_t delivered;
};

struct World::Instance {
  int id = 0;
  bool alive = true;
  uint64_t process = 0;  // a new one at each start: the marker's pid@start
  // Markers whose delete failed this term, tried again before the next message is read; the
  // list goes with the term (the shell's CrashGuard is the engine's), the markers stay in KV.
  std::vector<uint64_t> not_removed;
  uint64_t epoch = 0;
  std::unique_ptr<replayer::EngineCore> core;
  replayer::Output out;
  TimePoint wake_at{};
  std::unordered_map<replayer::Ref, RefInfo> refs;            // handed to it, not yet answered
  std::unordered_map<uint64_t, std::vector<uint64_t>> sends;  // send id -> seqs, in flight
  std::unordered_map<std::string, int> lane_sends;            // sends in flight per visitor
  std::unordered_map<std::string, uint64_t> lane_first;       // last seq first sent (delivery 1)
  std::unordered_set<uint64_t> finishing;       // seqs it got a 2xx for and has not acked yet
  std::unordered_set<uint64_t> sent_once;       // seqs it sent at least once (this term)
  std::unordered_set<uint64_t> dead_lettering;  // seqs whose dead letter it published, unacked
  uint64_t steps = 0;
  bool stopping = false;  // told to stop or that the lease is lost
  // The core was told a guard record failed and no record has been written since: no send may
  // start (a stored event it could not record would be sent again by the next leader).
  bool guard_blocked = false;
  // Guard records written and not yet answered, by publish id: when each was written. No send
  // may start while one has waited more than a second (the core's kGuardSlow).
  std::unordered_map<uint64_t, TimePoint> guard_unanswered;
  // Sites the core was answered "Website not found" for, and until when it may not send one
  // of their events (replayer::kSiteRecheck after the answer).
  std::unordered_map<int, TimePoint> site_unknown_until;
};

// How Umami answers; decided when the request is processed.
struct UmamiAnswer {
  UmamiAnswer() = default;
  UmamiAnswer(int s, std::string b, std::string e, bool r)
      : status(s), body(std::move(b)), error(std::move(e)), row(r) {}
  int status = 0;
  std::string body;
  std::string error;
  bool row = false;        // a website_event row (or session data) was written
  std::vector<bool> rows;  // a batch: per element, a row written with a 2xx for it
};

inline constexpr int64_t kMinute = 60'000;

}  // namespace sim
