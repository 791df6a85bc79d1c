// The engine core's intake, budget and stop (timers: engine_core_timers.cpp; sends and decisions:
// engine_core_send.cpp; its own account: engine_core_check.cpp).
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

}  // namespace replayer
