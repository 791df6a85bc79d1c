// The simulated world's time, its WEB_EVENTS work queue, the KV buckets and WEB_DLQ.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include "common/crash_guard.h"
#include "tests/sim/sim_internal.h"

namespace sim {
namespace {
// The contract's rule (docs/contract.md §3.5), independent of the code under test: the crash-loop
// guard dead-letters a message only after two readers stopped inside its marked window.
constexpr int kStopsBeforeDeadLetter = 2;
}  // namespace

const char* KindName(Kind k) {
  switch (k) {
    case Kind::kGood:
      return "good";
    case Kind::kBot:
      return "bot";
    case Kind::kValidation:
      return "validation-poison";
    case Kind::kIdentify:
      return "identify";
    case Kind::kLongUrl:
      return "long-url";
    case Kind::kHalfWrite:
      return "half-write-poison";
    case Kind::kMalformed:
      return "malformed";
    case Kind::kHeaderPoison:
      return "header-poison";
    case Kind::kReaderKiller:
      return "reader-killer";
    case Kind::kUnknownSite:
      return "unknown-site";
  }
  return "?";
}

const char* FaultName(Fault f) {
  switch (f) {
    case Fault::kDown:
      return "down";
    case Fault::kHung:
      return "hung";
    case Fault::kSlow:
      return "slow";
    case Fault::kDbDown:
      return "db-down";
    case Fault::kReadOnly:
      return "read-only";
    case Fault::kHalfWrite:
      return "half-writing";
    case Fault::kOddReply:
      return "odd-reply";
    case Fault::kKvDown:
      return "kv-down";
    case Fault::kDlqDown:
      return "dlq-down";
    case Fault::kFetchDown:
      return "fetch-down";
    case Fault::kAcksLost:
      return "acks-lost";
    case Fault::kNoBatch:
      return "no-batch";
    case Fault::kMarkerDeleteFails:
      return "marker-deletes-fail";
  }
  return "?";
}

World::World(Scenario sc) : sc_(std::move(sc)), rng_(sc_.seed ^ 0x5eedULL) {
  start_ = now_ = TimePoint{} + std::chrono::hours(1000);
  for (int i = 0; i < sc_.processes; ++i) umami_.push_back(std::make_unique<UmamiProc>());
  write_failures_.resize(sc_.processes);
  for (int i = 0; i < 2; ++i) {
    auto in = std::make_unique<Instance>();
    in->id = i;
    in->process = ++processes_started_;
    inst_.push_back(std::move(in));
  }
}

World::~World() = default;

void World::At(TimePoint t, std::function<void()> fn) {
  uint32_t slot;
  if (free_slots_.empty()) {
    slot = static_cast<uint32_t>(slots_.size());
    slots_.push_back(std::move(fn));
  } else {
    slot = free_slots_.back();
    free_slots_.pop_back();
    slots_[slot] = std::move(fn);
  }
  actions_.push(Action{std::max(t, now_), order_++, slot});
}

double World::simulated_minutes() const {
  return std::chrono::duration<double>(now_ - start_).count() / 60.0;
}

std::string World::Run() {
  ScheduleTraffic();
  ScheduleFaults();
  LeaseTick();
  // Liveness: while messages wait, something is acked at least every 30 minutes (a write fault
  // ends by itself after 20 minutes without a store), and all drains within a day.
  TimePoint cap = start_ + sc_.traffic + std::chrono::hours(24);
  last_ack_ = now_;
  while (!actions_.empty() && failure_.empty()) {
    Action a = actions_.top();
    actions_.pop();
    // Liveness too: the engine must let time move. A loop of inputs and commands at one
    // instant (a check answered and started again at once, for ever) is a hang in production.
    same_instant_ = a.at == now_ ? same_instant_ + 1 : 0;
    now_ = a.at;
    if (same_instant_ > kMaxStepsAtOneInstant) {
      Fail("livelock: " + std::to_string(same_instant_) + " steps without time moving");
      break;
    }
    std::function<void()> fn = std::move(slots_[a.slot]);
    free_slots_.push_back(a.slot);
    bool stalled = acked_ < msgs_.size() && now_ - last_ack_ > std::chrono::minutes(30);
    if (now_ > cap || stalled) {
      Fail(std::string(stalled ? "no progress for 30 minutes"
                               : "not drained a day after the traffic") +
           ": " + std::to_string(msgs_.size() - acked_) + " messages still in WEB_EVENTS");
      break;
    }
    fn();
    ++stats_.steps;
  }
  if (failure_.empty() && !healed_) Fail("the world stopped before the traffic ended");
  return failure_;
}

void World::Fail(const std::string& what) {
  if (!failure_.empty()) return;
  char when[32];
  std::snprintf(when, sizeof when,
                "t=%.3fs: ", std::chrono::duration<double>(now_ - start_).count());
  failure_ = when + what;
  for (const auto& in : inst_) {
    if (in->core)
      failure_ +=
          std::string("\n  instance ") + (in->id == 0 ? "A" : "B") + ": " + in->core->Summary();
  }
  while (!actions_.empty()) actions_.pop();
}

void World::Note(const char* what, uint64_t a, uint64_t b, int inst) {
  static const uint64_t watch = [] {
    const char* w = std::getenv("SIM_WATCH");  // a sequence to follow on stdout
    return w ? std::strtoull(w, nullptr, 10) : 0;
  }();
  if (watch != 0 && (a == watch || (a == 0 && std::strncmp(what, "write fault", 11) == 0))) {
    std::printf("watch %10.3fs  %-28s %10llu %10llu  [%c]\n",
                std::chrono::duration<double>(now_ - start_).count(), what,
                static_cast<unsigned long long>(a), static_cast<unsigned long long>(b),
                inst < 0 ? '-' : (inst == 0 ? 'A' : 'B'));
  }
  trace_.push_back(TraceLine{now_, what, a, b, inst});
  if (trace_.size() > trace_limit_) trace_.pop_front();
}

std::string World::Trace() const {
  std::string out;
  for (const auto& t : trace_) {
    char line[160];
    std::snprintf(line, sizeof line, "  %10.3fs  %-28s %10llu %10llu%s\n",
                  std::chrono::duration<double>(t.at - start_).count(), t.what,
                  static_cast<unsigned long long>(t.a), static_cast<unsigned long long>(t.b),
                  t.inst >= 0 ? (t.inst == 0 ? "  [A]" : "  [B]") : "");
    out += line;
  }
  return out;
}

bool World::FaultActive(Fault f, int process) const {
  for (const auto& s : sc_.faults) {
    if (s.fault == f && (s.process < 0 || s.process == process || process < 0) && now_ >= s.start &&
        now_ < s.end) {
      return true;
    }
  }
  return false;
}

// --- the work queue ---------------------------------------------------------------------------

void World::Publish(int index) {
  auto m = std::make_unique<Msg>();
  m->seq = msgs_.size() + 1;
  m->index = index;
  m->body = MakeBody(index, m->seq);
  msgs_.push_back(std::move(m));
  ++stats_.published;
  if (waiting_fetch_) {
    Fetch f = *waiting_fetch_;
    waiting_fetch_.reset();
    At(now_ + milliseconds(1), [this, f] { AnswerFetch(f.inst, f.epoch, f.max_messages, false); });
  }
}

size_t World::Available() const {
  size_t n = due_.size();
  int64_t max_pending = sc_.core.max_in_flight + 100;
  if (next_new_ <= msgs_.size() && unacked_ < max_pending) {
    n += std::min<size_t>(msgs_.size() - next_new_ + 1, max_pending - unacked_);
  }
  return n;
}

void World::FetchFor(int inst, replayer::FetchCmd cmd, uint64_t epoch) {
  if (FaultActive(Fault::kFetchDown, -1)) {
    At(now_ + milliseconds(500), [this, inst, epoch] {
      Feed(inst, epoch,
           [this](replayer::EngineCore& c) { c.OnFetched({}, "fetch WEB_EVENTS: Timeout", now_); });
    });
    return;
  }
  if (Available() > 0) {
    auto lat = milliseconds(rng_.Int(0, 2));
    At(now_ + lat, [this, inst, epoch, cmd] { AnswerFetch(inst, epoch, cmd.max_messages, false); });
    return;
  }
  // A pull request waits for messages up to its expiry (500 ms).
  uint64_t serial = ++fetch_serial_;
  waiting_fetch_ = std::make_unique<Fetch>(Fetch{inst, epoch, cmd.max_messages, serial});
  At(now_ + milliseconds(500), [this, inst, epoch, serial] {
    if (waiting_fetch_ && waiting_fetch_->serial == serial) {
      waiting_fetch_.reset();
      AnswerFetch(inst, epoch, 0, true);
    }
  });
}

void World::AnswerFetch(int inst, uint64_t epoch, int max_messages, bool timed_out) {
  std::vector<replayer::Delivery> batch;
  int64_t max_pending = sc_.core.max_in_flight + 100;
  // Only a live instance reads what it fetched: an answer to a dead one is never parsed.
  const bool reading = inst_[inst]->alive && inst_[inst]->epoch == epoch && inst_[inst]->core;
  while (!timed_out && static_cast<int>(batch.size()) < max_messages) {
    uint64_t seq = 0;
    if (!due_.empty()) {
      seq = *due_.begin();
      due_.erase(due_.begin());
    } else if (next_new_ <= msgs_.size() && unacked_ < max_pending) {
      seq = next_new_++;
      ++unacked_;
    } else {
      break;
    }
    Msg& m = *msgs_[seq - 1];
    m.out = true;
    m.progress_lost = false;
    ++m.deliveries;
    m.holder = inst;
    uint64_t gen = ++m.gen;
    At(now_ + sc_.core.ack_wait, [this, seq, gen] { Expire(seq, gen); });
    replayer::Delivery d;
    d.ref = ++next_ref_;
    d.stream_seq = seq;
    d.num_delivered = m.deliveries;
    d.bytes = static_cast<int64_t>(m.body.size()) + 40;
    d.subject = "web.events.site" + std::to_string(events_[m.index].site);
    // The shell's crash-loop guard (replayer/engine_workers.cpp), its KV markers as a map to
    // the process that wrote each: a redelivery is parsed under a marker, and one whose marker
    // of another process is there is not parsed at all.
    if (!reading) {
      d.parsed = replayer::Parse(m.body, "");
      batch.push_back(std::move(d));
      continue;
    }
    Instance& reader = *inst_[inst];
    // Markers whose delete failed are tried again before any message is read.
    if (!reader.not_removed.empty() && !FaultActive(Fault::kMarkerDeleteFails, -1)) {
      for (uint64_t left : reader.not_removed) crash_markers_.erase(left);
      reader.not_removed.clear();
    }
    const auto marker = crash_markers_.find(seq);
    std::optional<std::string> found;
    if (marker != crash_markers_.end()) found = marker->second;
    const std::string process = std::to_string(reader.process);
    const auto decision = common::crash_guard::Decide(m.deliveries, found, process);
    const auto step = decision.step;
    if (found && m.deliveries > 1 && !decision.stop_counted) ++stats_.own_markers;
    if (decision.stop_counted && step == common::crash_guard::Step::kMarkThenRead) {
      ++stats_.stops_counted;
    }
    if (step == common::crash_guard::Step::kDeadLetter) {
      ++stats_.invariant_checks;
      if (m.marked_stops < kStopsBeforeDeadLetter) {
        Fail("the crash-loop guard dead-lettered seq " + std::to_string(seq) + " after " +
             std::to_string(m.marked_stops) + " reader(s) stopped inside its marked window");
        return;
      }
      d.parsed.poison_reason = common::crash_guard::kReason;
      d.crash_loop_detail = "delivery " + std::to_string(m.deliveries);
      batch.push_back(std::move(d));
      continue;
    }
    if (step == common::crash_guard::Step::kMarkThenRead) {
      crash_markers_[seq] = common::crash_guard::Encode(
          {m.deliveries, 0, "sim-" + std::to_string(inst), process, decision.stops});
    }
    const bool killer = events_[m.index].kind == Kind::kReaderKiller;
    // Scenario::reader_killer: a good redelivery's reader killed from outside inside its marked
    // window (between the marker's write and its delete).
    const bool window_kill = !killer && sc_.reader_killer &&
                             step == common::crash_guard::Step::kMarkThenRead && !m.window_killed &&
                             window_kills_ < 6 && rng_.Chance(0.05);
    if (killer || window_kill) {
      // The instance dies: what it took comes back after the ack wait, the marker (if one was
      // written: a first delivery is read unmarked) stays.
      if (step == common::crash_guard::Step::kMarkThenRead) ++m.marked_stops;
      if (window_kill) {
        m.window_killed = true;
        ++window_kills_;
        ++stats_.window_kills;
      }
      Note(killer ? "reader killed" : "reader killed from outside in its marked window", 1, seq,
           inst);
      CrashOrLose(inst, InstanceAction::kCrash);
      return;
    }
    d.parsed = replayer::Parse(m.body, "");
    if (step == common::crash_guard::Step::kMarkThenRead) {
      RemoveMarker(inst, seq);
    } else {
      crash_markers_.erase(seq);
    }
    batch.push_back(std::move(d));
  }
  Instance& I = *inst_[inst];
  if (I.alive && I.epoch == epoch && I.core) {
    for (const auto& d : batch) I.refs[d.ref] = RefInfo{d.stream_seq, d.num_delivered};
  }
  Note("fetch answered", batch.size(), batch.empty() ? 0 : batch.front().stream_seq, inst);
  Feed(inst, epoch, [this, b = std::move(batch)](replayer::EngineCore& c) mutable {
    c.OnFetched(std::move(b), "", now_);
  });
}

void World::RemoveMarker(int inst, uint64_t seq) {
  Instance& I = *inst_[inst];
  if (!FaultActive(Fault::kMarkerDeleteFails, -1)) {
    crash_markers_.erase(seq);
    return;
  }
  I.not_removed.push_back(seq);
  ++stats_.markers_left;
  Note("marker delete failed", seq, 0, inst);
  // Scenario::own_marker: the lease is lost while this redelivery is held (up to three times a
  // scenario), and the same process takes it back (LeaseTick).
  if (!sc_.own_marker || own_marker_losses_ >= 3 || leader_ != inst || I.stopping) return;
  ++own_marker_losses_;
  At(now_ + milliseconds(1), [this, inst] { CrashOrLose(inst, InstanceAction::kLeaseLoss); });
}

void World::Expire(uint64_t seq, uint64_t gen) {
  Msg& m = *msgs_[seq - 1];
  if (m.acked || !m.out || m.gen != gen) return;
  ++stats_.invariant_checks;
  if (m.holder >= 0) {
    Instance& I = *inst_[m.holder];
    if (I.alive && I.core && !I.core->Done() && I.core->Holds(seq) && !m.progress_lost) {
      Fail("the ack wait of seq " + std::to_string(seq) +
           " ran out while the instance holding it still works on it");
      return;
    }
  }
  Note(m.progress_lost ? "ack wait expired (acks lost)" : "ack wait expired", seq, m.deliveries,
       m.holder);
  m.progress_lost = false;
  ++stats_.redeliveries;
  MakeDue(seq);
}

void World::MakeDue(uint64_t seq) {
  Msg& m = *msgs_[seq - 1];
  if (m.acked) return;
  m.out = false;
  m.holder = -1;
  ++m.gen;
  due_.insert(seq);
  if (waiting_fetch_) {
    Fetch f = *waiting_fetch_;
    waiting_fetch_.reset();
    At(now_ + milliseconds(1), [this, f] { AnswerFetch(f.inst, f.epoch, f.max_messages, false); });
  }
}

void World::Ack(uint64_t seq) {
  Msg& m = *msgs_[seq - 1];
  if (m.acked) return;
  m.acked = true;
  ++acked_;
  last_ack_ = now_;
  m.out = false;
  ++m.gen;
  due_.erase(seq);
  --unacked_;
  m.body.clear();
  m.body.shrink_to_fit();
}

void World::Nak(uint64_t seq, milliseconds delay) {
  Msg& m = *msgs_[seq - 1];
  if (m.acked || !m.out) return;
  uint64_t gen = ++m.gen;
  m.holder = -1;
  At(now_ + delay, [this, seq, gen] {
    Msg& mm = *msgs_[seq - 1];
    if (!mm.acked && mm.gen == gen) MakeDue(seq);
  });
}

void World::InProgress(uint64_t seq) {
  Msg& m = *msgs_[seq - 1];
  if (m.acked || !m.out) return;
  if (FaultActive(Fault::kAcksLost, -1) && rng_.Chance(0.5)) {
    m.progress_lost = true;  // the ack wait keeps running from the delivery or last touch
    return;
  }
  m.progress_lost = false;
  uint64_t gen = ++m.gen;
  At(now_ + sc_.core.ack_wait, [this, seq, gen] { Expire(seq, gen); });
}

}  // namespace sim
