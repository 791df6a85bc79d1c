// The engine core's intake, budget, timers and stop (sends and decisions: engine_core_send.cpp).
#include <algorithm>

#include "replayer/engine_core_state.h"

namespace replayer {

EngineCore::State::State(CoreConfig c) : cfg(std::move(c)) {
  for (const auto& name : cfg.processes) {
    Proc p;
    p.name = name;
    p.health = ProcessHealth(cfg.check_cache);
    procs.push_back(std::move(p));
  }
}

EngineCore::EngineCore(CoreConfig config) : s_(std::make_unique<State>(std::move(config))) {}
EngineCore::~EngineCore() = default;

void EngineCore::Take(Output& out) {
  out.clear();
  std::swap(out, s_->out);
}

void EngineCore::Start(TimePoint now) {
  auto& s = *s_;
  for (int i = 0; i < static_cast<int>(s.procs.size()); ++i) s.StartCheck(i, now);
  s.next_tick = now + kTick;
  s.next_sweep = now + kVisitSweep;
  s.AfterInput(now);
}

void EngineCore::OnFetched(std::vector<Delivery> batch, const std::string& error, TimePoint now) {
  auto& s = *s_;
  s.fetching = false;
  s.last_fetch_answer = now;
  if (!error.empty()) {
    s.Tell(Note::Kind::kFetchFailed).text = error;
    s.fetch_retry_at = now + kFetchRetry;
  }
  if (!batch.empty()) {
    Note& n = s.Tell(Note::Kind::kFetched);
    n.count = static_cast<int64_t>(batch.size());
    for (const auto& d : batch) n.status += d.num_delivered > 1 ? 1 : 0;
  }
  for (auto& d : batch) s.Admit(std::move(d), now);
  s.AfterInput(now);
}

void EngineCore::OnGuardAnswer(uint64_t lookup_id, Lookup answer, TimePoint now) {
  auto& s = *s_;
  uint64_t eid = EventOfOp(lookup_id);
  Held* found = s.CurrentOp(lookup_id);
  if (found != nullptr && found->stage == Stage::kLookingUp) {
    Held& h = *found;
    h.op = 0;
    switch (answer) {
      case Lookup::kFound: {
        s.Emit(AckCmd{h.ref, AckWhy::kDuplicate});
        s.Tell(Note::Kind::kDuplicateSkipped).seq = h.seq;
        s.Finish(eid, now);
        break;
      }
      case Lookup::kAbsent:
        h.stage = Stage::kWaiting;
        ++h.gen;
        s.TryReady(eid, now);
        break;
      case Lookup::kError: {
        Note& n = s.Tell(Note::Kind::kLookupFailed);
        n.seq = h.seq;
        n.text = "the duplicate guard could not be read; reading it again";
        s.Arm(eid, h, now + kLookupRetry);  // stays kLookingUp; the timer asks again
        break;
      }
    }
  }
  s.AfterInput(now);
}

void EngineCore::OnVisitAnswer(const std::string& lane, Lookup answer, const std::string& value,
                               TimePoint now) {
  auto& s = *s_;
  LaneKey key(lane);
  if (s.visit_lookups.erase(key) > 0) {
    VisitState state;
    if (answer == Lookup::kFound) state = VisitStates::Decode(value);
    if (answer == Lookup::kError) {
      // Unreadable: send without a token; Umami then begins a visit of its own.
      s.Tell(Note::Kind::kLookupFailed).text = "a visit state could not be read";
    }
    if (!s.visits.Find(key, now)) s.visits.Set(key, std::move(state), now);
    if (auto head = s.lanes.Head(key)) s.TryReady(*head, now);
  }
  s.AfterInput(now);
}

void EngineCore::OnTimer(TimePoint now) {
  auto& s = *s_;
  while (!s.timers.empty() && s.timers.top().at <= now) {
    Timer t = s.timers.top();
    s.timers.pop();
    auto it = s.held.find(t.eid);
    if (it == s.held.end() || it->second.gen != t.gen) continue;  // done, or moved on
    s.Fire(t.eid, it->second, now);
  }
  if (now >= s.next_tick) {
    s.Tick(now);
    s.next_tick = now + kTick;
  }
  s.AfterInput(now);
}

void EngineCore::OnStop(TimePoint now) {
  auto& s = *s_;
  if (s.mode == Mode::kRunning) {
    s.mode = Mode::kStopping;
    s.stop_deadline = now + kStopGrace;
  }
  s.AfterInput(now);
}

void EngineCore::OnLeadershipLost(TimePoint now) {
  auto& s = *s_;
  if (s.mode == Mode::kRunning) s.stop_deadline = now + kStopGrace;
  s.mode = Mode::kLeaseLost;
  s.AfterInput(now);
}

bool EngineCore::Done() const { return s_->done; }
int EngineCore::held() const { return s_->held_count; }
int64_t EngineCore::held_bytes() const { return s_->held_bytes; }
int EngineCore::sends_in_flight() const { return s_->sends; }
size_t EngineCore::lanes_active() const { return s_->lanes.lanes(); }
size_t EngineCore::lanes_blocked() const { return s_->lanes.blocked(); }
size_t EngineCore::sites_unknown() const { return s_->sites.size(); }
size_t EngineCore::lanes_blocked_sites() const { return s_->lanes.BlockedSites(); }
bool EngineCore::ProcessUp(int p) const {
  return s_->procs[p].health.Last() == ProcessHealth::State::kUp;
}
bool EngineCore::ProcessWriteFault(int p) const {
  return s_->procs[p].run.faulted() || s_->shared_run.faulted();
}
size_t EngineCore::timers() const { return s_->timers.size(); }
bool EngineCore::Holds(uint64_t seq) const { return s_->by_seq.count(seq) != 0; }
size_t EngineCore::LaneWaiting(const std::string& lane) const { return s_->lanes.waiting(lane); }
bool EngineCore::LaneFailing(const std::string& lane) const { return s_->lanes.failing(lane); }

// --- State ----------------------------------------------------------------------------------

void EngineCore::State::AfterInput(TimePoint now) {
  if (!done) {
    if (mode == Mode::kRunning) {
      Dispatch(now);
      MaybeFetch(now);
    } else {
      MaybeRelease(now);
    }
  }
  // After every input, so the heap never holds more than twice the live timers (SelfCheck).
  CompactTimers();
  if (done) return;
  TimePoint next = next_tick;
  if (!timers.empty()) next = std::min(next, timers.top().at);
  if (release_at != TimePoint{}) next = std::min(next, release_at);
  if (fetch_retry_at > now) next = std::min(next, fetch_retry_at);
  if (next != armed) {
    armed = next;
    Emit(ArmTimerCmd{next});
  }
}

int EngineCore::State::FetchRoom() const {
  // Fetch in whole batches when the limit allows, so a full engine is not fed one by one.
  int low_water = std::min(cfg.fetch_batch, std::max(1, cfg.max_in_flight / 4));
  int room = cfg.max_in_flight + probe_room - held_count;
  return room < (probe_room > 0 ? 1 : low_water) ? 0 : room;
}

void EngineCore::State::MaybeFetch(TimePoint now) {
  if (fetching || now < fetch_retry_at) return;
  int room = FetchRoom();
  if (room == 0) return;
  // A message is charged its bytes, its parsed event (at most as big again: ParsedBytes) and
  // kHeldMessageBytes: the server, which counts the bytes alone, is asked for half of what is
  // left of the room once the records of as many messages as the fetch may bring are set aside.
  const int64_t free = cfg.max_bytes_in_flight - held_bytes;
  const int count = static_cast<int>(std::min<int64_t>(
      std::min(room, cfg.fetch_batch), std::max<int64_t>(1, free / (2 * kHeldMessageBytes))));
  int64_t bytes = (free - count * kHeldMessageBytes) / 2;
  if (bytes < cfg.max_message_bytes) {
    // A pull request never hands out a message bigger than its byte limit: ask for room for the
    // largest one, but only with nothing held, so one huge message is taken alone.
    if (held_count > 0) return;
    bytes = cfg.max_message_bytes;
  }
  fetching = true;
  Emit(FetchCmd{count, bytes});
}

void EngineCore::State::Admit(Delivery d, TimePoint now) {
  // A message held here delivered again (its ack wait ran out, or a nak reached an older
  // delivery): answer the newest delivery from now on, and never send the event twice.
  if (auto it = by_seq.find(d.stream_seq); it != by_seq.end()) {
    Held& h = held[it->second];
    Emit(ForgetCmd{h.ref});
    h.ref = d.ref;
    h.touched = now;  // the new delivery's ack wait starts now
    Tell(Note::Kind::kRedeliveryAdopted).seq = d.stream_seq;
    return;
  }
  // Finished here moments ago; the guard covers older ones and other instances.
  if (d.num_delivered > 1 && recent.Contains(d.stream_seq)) {
    Emit(AckCmd{d.ref, AckWhy::kDuplicate});
    Tell(Note::Kind::kDuplicateSkipped).seq = d.stream_seq;
    return;
  }
  uint64_t eid = ++next_eid;
  Held h;
  h.ref = d.ref;
  h.seq = d.stream_seq;
  h.bytes = d.bytes;
  h.subject = std::move(d.subject);
  h.touched = now;
  ++held_count;
  held_bytes += d.bytes;
  by_seq[h.seq] = eid;
  if (!d.parsed.event) {
    Held& p = held.emplace(eid, std::move(h)).first->second;
    const bool crash_loop = !d.crash_loop_detail.empty();
    if (crash_loop) p.last_answer = std::move(d.crash_loop_detail);
    DeadLetter(eid, p, d.parsed.poison_reason, crash_loop ? kCodeCrashLoop : kCodePoison, now);
    return;
  }
  h.ev = std::move(*d.parsed.event);
  h.lane = h.ev.LaneKey();
  h.replayed = d.replayed;
  Held& e = held.emplace(eid, std::move(h)).first->second;
  // While every process is down, the head cannot be tried, so its earlier failures say nothing
  // about the wait: the visitor's events queue without the cap (the in-flight budget still
  // bounds them), as they would behind a head whose failure fell in the outage.
  if (AllDown()) lanes.ClearFailing(e.lane);
  auto added = lanes.Add(e.lane, eid);
  // A first delivery of an original message cannot have been sent before; a redelivery or a
  // replay may have been. Only those pay for the guard's read.
  if (d.num_delivered > 1 || d.replayed) {
    LookUpGuard(eid, e);
  } else {
    e.stage = Stage::kWaiting;
  }
  EnsureVisitKnown(e.lane, e.ev, now);
  if (added.is_head) TryReady(eid, now);
  for (uint64_t over : added.overflow) {
    auto o = held.find(over);
    if (o != held.end()) DeadLetter(over, o->second, kOverflowReason, kCodeOverflow, now);
  }
}

void EngineCore::State::LookUpGuard(uint64_t eid, Held& h) {
  h.stage = Stage::kLookingUp;
  ++h.gen;
  NewOp(eid, h);
  Emit(GuardLookupCmd{h.op, KvSafe(h.ev.id)});
}

void EngineCore::State::EnsureVisitKnown(const LaneKey& lane, const WebEvent& ev, TimePoint now) {
  if (visits.Find(lane, now) || visit_lookups.count(lane)) return;
  visit_lookups.insert(lane);
  Emit(VisitLookupCmd{lane.str(), VisitKey(ev.website, ev.visitor)});
}

void EngineCore::State::TryReady(uint64_t eid, TimePoint now) {
  auto it = held.find(eid);
  if (it == held.end() || it->second.stage != Stage::kWaiting) return;
  Held& h = it->second;
  if (lanes.Head(h.lane) != eid) return;
  if (!visits.Find(h.lane, now)) {
    EnsureVisitKnown(h.lane, h.ev, now);  // the answer makes it ready
    return;
  }
  MakeReady(eid, h);
}

void EngineCore::State::MakeReady(uint64_t eid, Held& h) {
  h.stage = Stage::kReady;
  ++h.gen;
  // Whatever made it ready, it no longer waits for a write fault.
  if (h.parked_write_fault) --parked;
  h.parked_write_fault = false;
  ready.push_back(eid);
}

void EngineCore::State::NewOp(uint64_t eid, Held& h) {
  h.op = (eid << kOpBits) | (++h.op_count & kOpMask);
}

Held* EngineCore::State::CurrentOp(uint64_t op) {
  auto it = held.find(EventOfOp(op));
  if (it == held.end() || it->second.op != op || op == 0) return nullptr;
  return &it->second;
}

void EngineCore::State::Arm(uint64_t eid, Held& h, TimePoint at) {
  // The new generation makes any earlier entry of this event stale: one live entry per event.
  ++h.gen;
  timers.push(Timer{at, eid, h.gen});
}

void EngineCore::State::CompactTimers() {
  timers.Compact(held.size(), [this](const Timer& t) {
    auto it = held.find(t.eid);
    return it != held.end() && it->second.gen == t.gen;
  });
}

void EngineCore::State::Fire(uint64_t eid, Held& h, TimePoint now) {
  switch (h.stage) {
    case Stage::kBackoff:
      MakeReady(eid, h);
      break;
    case Stage::kLookingUp:
      LookUpGuard(eid, h);  // the last read failed: read again
      break;
    case Stage::kFinishing:
      PutGuard(eid, h, now);  // no answer for the guard record in time, or it failed: again
      break;
    case Stage::kDeadLettering:   // no answer in time: publish again (the same message id)
    case Stage::kDeadLetterWait:  // the last publish failed
      DeadLetter(eid, h, h.dlq_reason, h.dlq_code, now);
      break;
    case Stage::kSending: {
      // The HTTP client owes an answer (its own timeout passed long ago): give the send up as
      // failed. Umami may still store it: then a retry stores it twice, as after any timeout.
      Proc& p = procs[h.process];
      Note& n = Tell(Note::Kind::kSendStuck);
      n.process = h.process;
      n.seq = h.seq;
      n.first = !p.send_stuck_noted;
      p.send_stuck_noted = true;
      EndSend(h);
      Unbatch(h);  // the head's failure; the events behind it wait again, uncharged
      h.last_answer = "no answer: the HTTP client gave none within the send timeout";
      OnFailed(eid, h, now);
      break;
    }
    default:
      break;
  }
}

void EngineCore::State::Tick(TimePoint now) {
  // Keep every held message alive: JetStream redelivers it after the ack wait otherwise.
  auto touch_every = cfg.ack_wait / 3;
  for (auto& [eid, h] : held) {
    if (now - h.touched >= touch_every) {
      Emit(InProgressCmd{h.ref});
      h.touched = now;
    }
  }
  for (int i = 0; i < static_cast<int>(procs.size()); ++i) {
    Proc& p = procs[i];
    if (p.check_id != 0 && now - p.check_started >= cfg.send_timeout + kSendGrace) {
      // No complete answer: the check failed. Its late answer, if any, is ignored; a new check
      // follows, so a lost answer can never keep the process down.
      p.abandoned[p.check_id] = p.check_started;
      Note& n = Tell(Note::Kind::kCheckTimedOut);
      n.process = i;
      n.text = p.check_detail;
      p.check_id = 0;
      CompleteCheck(i, false, now);
    }
    for (auto it = p.abandoned.begin(); it != p.abandoned.end();) {
      auto age = now - it->second;
      if (age > cfg.send_timeout && !p.check_stuck_noted) {
        p.check_stuck_noted = true;
        Note& n = Tell(Note::Kind::kCheckStuck);
        n.process = i;
        n.seconds = std::chrono::duration<double>(age).count();
      }
      // Forgotten after ten minutes: an answer that late will never come.
      it = age > std::chrono::minutes(10) ? p.abandoned.erase(it) : std::next(it);
    }
    if (p.run.Expire(now)) {
      Note& n = Tell(Note::Kind::kWriteFaultEnded);
      n.process = i;
      n.text = "no store for 20 minutes: the failures of the events it parked count again";
    }
    if (p.health.Last() != ProcessHealth::State::kUp && p.check_id == 0 &&
        now - p.check_started >= kDownRecheck && mode == Mode::kRunning) {
      StartCheck(i, now);
    }
  }
  if (shared_run.Expire(now)) {
    Note& n = Tell(Note::Kind::kWriteFaultEnded);
    n.process = -1;
    n.text = "no store for 20 minutes: the failures of the events it parked count again";
  }
  if (now >= next_sweep) {
    visits.Sweep(now);
    next_sweep = now + kVisitSweep;
  }
  // Stalled: the budget is full and nothing held can move until Umami stores something (every
  // event is parked by a write fault or waits behind one). Only a new event can show whether
  // Umami stores again, so a few more may come in: without them a write fault that was none (a
  // few poison heads failing while nothing else was sent) would never end. The server's max ack
  // pending (max_in_flight + 100) stays above this.
  // The room grows while the new events all join visitors that wait too, up to 100 (the
  // server's max ack pending is max_in_flight + 100).
  if (mode == Mode::kRunning && !fetching && FetchRoom() == 0 && probe_room < kMaxProbeRoom) {
    bool stalled = true;
    for (const auto& [eid, h] : held) {
      bool is_parked = h.stage == Stage::kBackoff && h.parked_write_fault;
      if (h.stage != Stage::kWaiting && h.stage != Stage::kSiteWait && !is_parked) {
        stalled = false;
        break;
      }
    }
    if (stalled) {
      probe_room =
          std::min(kMaxProbeRoom, probe_room + std::min(25, std::max(1, cfg.max_in_flight / 10)));
    }
  }
}

void EngineCore::State::Finish(uint64_t eid, TimePoint now) {
  auto it = held.find(eid);
  if (it == held.end()) return;
  Held& h = it->second;
  recent.Add(h.seq);
  SiteForget(eid, h, now);
  if (!h.lane.empty()) {
    if (lanes.Head(h.lane) == eid) {
      if (auto next = lanes.PopHead(h.lane)) TryReady(*next, now);
    } else {
      lanes.Remove(h.lane, eid);
    }
  }
  by_seq.erase(h.seq);
  --held_count;
  held_bytes -= h.bytes;
  held.erase(it);
}

void EngineCore::State::MaybeRelease(TimePoint now) {
  if (release_at == TimePoint{}) {
    bool busy = sends > 0 || fetching;
    for (const auto& [eid, h] : held) {
      busy = busy || h.stage == Stage::kFinishing || h.stage == Stage::kDeadLettering;
    }
    if (busy && now < stop_deadline) return;
    release_at = mode == Mode::kStopping ? std::max(now, last_fetch_answer + kPullExpiry) : now;
  }
  if (now < release_at) return;
  int64_t released = 0;
  for (auto& [eid, h] : held) {
    if (h.stage == Stage::kFinishing) {
      // In Umami already; only its guard record is missing. Released, it would be sent again.
      Emit(AckCmd{h.ref, AckWhy::kStoredUnguarded});
      continue;
    }
    if (mode == Mode::kLeaseLost) {
      Emit(ForgetCmd{h.ref});
    } else {
      // A send still unanswered may yet be stored: its event comes back only once that send
      // would have timed out, so the next process does not send it while Umami still works on
      // it.
      bool sent = h.stage == Stage::kSending || h.stage == Stage::kBatched;
      Emit(NakCmd{h.ref, sent ? cfg.send_timeout : milliseconds(0)});
    }
    ++released;
  }
  Note& n = Tell(Note::Kind::kReleased);
  n.count = released;
  n.status = mode == Mode::kLeaseLost ? 0 : 1;
  held.clear();
  by_seq.clear();
  ready.clear();
  for (auto& [site, b] : sites) {  // their events are handed back: none is under way
    b.probe = 0;
    b.waiting.clear();
  }
  lanes = Lanes();
  held_count = 0;
  held_bytes = 0;
  sends = 0;
  parked = 0;
  done = true;
}

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
