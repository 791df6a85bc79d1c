// The engine core's sends, health checks, decisions and publishes (intake: engine_core.cpp).
#include <optional>

#include "replayer/engine_core_state.h"
#include "replayer/umami_reply.h"

namespace replayer {

void EngineCore::OnSendAnswer(uint64_t send_id, const HttpAnswer& a, TimePoint now) {
  auto& s = *s_;
  uint64_t eid = EventOfOp(send_id);
  Held* found = s.CurrentOp(send_id);
  if (found != nullptr && found->stage == Stage::kSending) {
    Held& h = *found;
    if (!h.batch.empty()) {
      s.OnBatchAnswer(eid, h, a, now);
      s.AfterInput(now);
      return;
    }
    Proc& p = s.procs[h.process];
    s.EndSend(h);
    p.send_stuck_noted = false;
    Note& done = s.Tell(Note::Kind::kSendDone);
    done.process = h.process;
    done.seconds = a.seconds;
    done.count = 1;
    if (a.status >= 200 && a.status < 300) {
      s.OnStored(eid, h, ParseSendReply(a.body), now);
    } else {
      h.last_answer = AnswerExcerpt(a.status, a.body, a.error);
      Note& n = s.Tell(Note::Kind::kSendFailed);
      n.process = h.process;
      n.status = a.status;
      n.seq = h.seq;
      n.text = h.last_answer;
      s.OnSendFailed(eid, h, a.status, a.body, now);
    }
  }
  s.AfterInput(now);
}

void EngineCore::OnCheckAnswer(uint64_t check_id, CheckPart part, const HttpAnswer& a,
                               TimePoint now) {
  auto& s = *s_;
  for (int i = 0; i < static_cast<int>(s.procs.size()); ++i) {
    Proc& p = s.procs[i];
    if (p.abandoned.erase(check_id) > 0) {
      p.check_stuck_noted = false;  // the HTTP client answers again
      break;
    }
    if (p.check_id != check_id) continue;
    std::string what = AnswerExcerpt(a.status, a.body, a.error);
    if (part == CheckPart::kHeartbeat) {
      p.heartbeat_answered = true;
      p.heartbeat_ok = HeartbeatPassed(a.status);
      if (!p.heartbeat_ok) p.check_detail = "heartbeat " + what;
    } else {
      p.probe_answered = true;
      p.probe_ok = ProbePassed(a.status, a.body);
      if (!p.probe_ok) p.check_detail = "probe " + what;
    }
    if (p.heartbeat_answered && p.probe_answered) {
      p.check_id = 0;
      s.CompleteCheck(i, p.heartbeat_ok && p.probe_ok, now);
    }
    break;
  }
  s.AfterInput(now);
}

void EngineCore::OnPublished(uint64_t pub_id, const PubOutcome& o, TimePoint now) {
  auto& s = *s_;
  uint64_t eid = EventOfOp(pub_id);
  Held* found = s.CurrentOp(pub_id);
  if (found != nullptr) {
    Held& h = *found;
    h.op = 0;
    if (h.stage == Stage::kFinishing) {
      s.OnPublishedGuard(eid, h, o, now);
    } else if (h.stage == Stage::kDeadLettering) {
      s.OnPublishedDeadLetter(eid, h, o, now);
    }
  }
  s.AfterInput(now);
}

// --- State ----------------------------------------------------------------------------------

void EngineCore::State::Dispatch(TimePoint now) {
  if (GuardGateClosed(now)) return;
  while (!ready.empty() && sends < cfg.workers) {
    uint64_t eid = ready.front();
    auto it = held.find(eid);
    if (it == held.end() || it->second.stage != Stage::kReady) {
      ready.pop_front();
      continue;
    }
    if (HeldBySite(eid, it->second, now)) {  // dead-lettered unsent, or waits for its site
      ready.pop_front();
      continue;
    }
    int p = PickProcess();
    if (p < 0) return;  // every process is down or busy: the events wait, the checks go on
    ready.pop_front();
    Send(eid, it->second, p, now);
  }
}

bool EngineCore::State::GuardGateClosed(TimePoint now) {
  if (guard_blocked && !AnyFinishing()) guard_blocked = false;  // its record's event is gone
  if (guard_blocked) return true;
  while (!guard_writes.empty()) {
    const GuardWrite& g = guard_writes.front();
    auto it = held.find(g.eid);
    if (it != held.end() && it->second.stage == Stage::kFinishing && it->second.op == g.op) break;
    guard_writes.pop_front();  // answered (or written again: a newer entry follows)
  }
  return !guard_writes.empty() && now - guard_writes.front().since >= kGuardSlow;
}

bool EngineCore::State::AnyFinishing() const {
  for (const auto& [eid, h] : held) {
    if (h.stage == Stage::kFinishing) return true;
  }
  return false;
}

int EngineCore::State::PickProcess() const {
  // The least busy process that is up, one not in a write fault first: a process that cannot
  // write answers fast and would draw the sends to itself. A process in a write fault gets
  // sends again when it is the only one with room, or when its fault ends.
  int best = -1;
  for (int pass = 0; pass < 2 && best < 0; ++pass) {
    for (int i = 0; i < static_cast<int>(procs.size()); ++i) {
      const Proc& p = procs[i];
      if (p.health.Last() != ProcessHealth::State::kUp) continue;
      if (p.in_flight >= cfg.sends_per_process) continue;
      if (pass == 0 && p.run.faulted()) continue;
      if (best < 0 || p.in_flight < procs[best].in_flight) best = i;
    }
  }
  return best;
}

bool EngineCore::State::AllDown() const {
  for (const Proc& p : procs) {
    if (p.health.Last() != ProcessHealth::State::kDown) return false;
  }
  return !procs.empty();
}

void EngineCore::State::Send(uint64_t eid, Held& h, int p, TimePoint now) {
  SendCmd c;
  NewOp(eid, h);
  c.send_id = h.op;
  c.process = p;
  c.stream_seq = h.seq;
  c.timeout = cfg.send_timeout;
  c.headers.reserve(4);  // one allocation for the headers below, not three
  c.headers.emplace_back("Content-Type", "application/json");
  // Umami 2.10 reads the client from these headers; 3.x reads the payload's ip/userAgent first.
  // Parse() refused control characters in both.
  if (!h.ev.user_agent.empty()) c.headers.emplace_back("User-Agent", h.ev.user_agent);
  if (!h.ev.ip.empty()) c.headers.emplace_back("X-Forwarded-For", h.ev.ip);
  std::string token;
  if (const VisitState* v = visits.Find(h.lane, now)) {
    token = VisitStates::TokenFor(*v, h.ev.accepted_at_ms);
  }
  h.token_sent = !token.empty();
  h.stage = Stage::kSending;
  h.process = p;
  h.sent_at = now;
  h.sent_op = ++next_op;
  BatchFor(h, p, token, now);
  if (h.token_sent) c.headers.emplace_back("x-umami-cache", std::move(token));
  if (batch_scratch.empty()) {
    c.body = BuildSendBody(h.ev);
  } else {
    std::vector<const WebEvent*> events{&h.ev};
    c.batch = true;
    c.batch_seqs.push_back(h.seq);
    for (uint64_t id : batch_scratch) {
      Held& f = held.find(id)->second;
      f.stage = Stage::kBatched;
      f.process = p;
      f.sent_at = now;
      f.sent_op = h.sent_op;
      f.token_sent = true;
      ++f.gen;
      events.push_back(&f.ev);
      c.batch_seqs.push_back(f.seq);
    }
    h.batch = batch_scratch;
    c.body = BuildBatchBody(events);
  }
  ++procs[p].in_flight;
  ++sends;
  Arm(eid, h, now + cfg.send_timeout + kSendGrace);
  Emit(std::move(c));
}

void EngineCore::State::EndSend(Held& h) {
  --procs[h.process].in_flight;
  --sends;
  h.op = 0;
  ++h.gen;
}

void EngineCore::State::OnStored(uint64_t eid, Held& h, const SendReply& reply, TimePoint now) {
  if (reply.kind == SendReply::Kind::kDroppedBot) {
    // Stored nothing: neither a store for the write-fault rule nor a guard record.
    Tell(Note::Kind::kDroppedByUmami).seq = h.seq;
    Emit(AckCmd{h.ref, AckWhy::kDroppedByUmami});
    Finish(eid, now);
    return;
  }
  Proc& p = procs[h.process];
  p.last_store = now;
  SiteStored(h, now);
  if (!reply.token_problem.empty()) {
    Note& n = Tell(Note::Kind::kTokenIgnored);
    n.process = h.process;
    n.text = reply.token_problem;
    n.first = !p.token_noted;
    p.token_noted = true;
  }
  Note& n = Tell(Note::Kind::kStored);
  n.seq = h.seq;
  n.process = h.process;
  n.accepted_at_ms = h.ev.accepted_at_ms;
  bool ended = false;
  if (p.run.RecordStored(h.sent_at)) {
    Tell(Note::Kind::kWriteFaultEnded).process = h.process;
    ended = true;
  }
  if (shared_run.RecordStored(h.sent_at)) {
    Tell(Note::Kind::kWriteFaultEnded).process = -1;
    ended = true;
  }
  // Umami stores again: every event parked by a write fault retries now (on a process that
  // is not in one, when there is room). A store of a send that began before the fault proves
  // nothing while the fault lasts.
  bool any_fault = shared_run.faulted();
  for (const auto& q : procs) any_fault = any_fault || q.run.faulted();
  if (parked > 0 && (ended || !any_fault)) WakeParked(now);
  probe_room = 0;  // progress: the next tick judges the budget afresh
  // The visit: a send with the token continued the visit; one without began a new visit at this
  // event's time, unless it is older than the visit under way (a replay): that one stays.
  // (Built only when it changes: a token is some 300 bytes, and most sends change nothing.)
  const VisitState* current = visits.Find(h.lane, now);
  std::optional<VisitState> next;
  if (h.token_sent && current) {
    if (!reply.cache_token.empty() && reply.cache_token != current->token) {
      next = VisitState{reply.cache_token, current->start_ms};
    }
  } else if (!current || current->token.empty() || h.ev.accepted_at_ms >= current->start_ms) {
    next = VisitState{reply.cache_token, h.ev.accepted_at_ms};
  }
  if (next) {
    std::string value = VisitStates::Encode(*next);
    if (visits.Set(h.lane, std::move(*next), now)) {
      Emit(PutVisitCmd{VisitKey(h.ev.website, h.ev.visitor), std::move(value)});
    }
  }
  // The visitor's next event may go now: this one is in Umami.
  if (lanes.Head(h.lane) == eid) {
    if (auto after = lanes.PopHead(h.lane)) TryReady(*after, now);
  }
  PutGuard(eid, h, now);
}

void EngineCore::State::PutGuard(uint64_t eid, Held& h, TimePoint now) {
  h.stage = Stage::kFinishing;
  NewOp(eid, h);
  Emit(PutGuardCmd{h.op, KvSafe(h.ev.id), std::to_string(h.seq)});
  guard_writes.push_back({eid, h.op, now});
  Arm(eid, h, now + kGuardAckWait);
}

void EngineCore::State::OnPublishedGuard(uint64_t eid, Held& h, const PubOutcome& o,
                                         TimePoint now) {
  if (o.kind == PubOutcome::Kind::kStored) {
    // The guard record is stored: a redelivery from here on is recognised. Now ack.
    guard_blocked = false;
    Emit(AckCmd{h.ref, AckWhy::kStored});
    Finish(eid, now);
    return;
  }
  guard_blocked = true;
  Note& n = Tell(Note::Kind::kGuardFailed);
  n.seq = h.seq;
  n.text = o.error;
  Arm(eid, h, now + kGuardRetry);  // stays kFinishing: the timer writes the record again
}

void EngineCore::State::OnFailed(uint64_t eid, Held& h, TimePoint now) {
  Proc& p = procs[h.process];
  // Judged only by a check that began after this send did: an older one may predate the fault.
  auto fresh = p.health.FreshSince(h.sent_op, now);
  if (fresh != ProcessHealth::State::kUnknown) {
    Decide(eid, h, fresh == ProcessHealth::State::kUp, now);
    return;
  }
  h.stage = Stage::kChecking;
  ++h.gen;
  p.checking.push_back(eid);
  if (p.check_id == 0) StartCheck(h.process, now);  // else one follows the check under way
}

void EngineCore::State::StartCheck(int pi, TimePoint now) {
  Proc& p = procs[pi];
  p.check_id = ++next_op;
  p.check_op = p.check_id;
  p.check_started = now;
  p.heartbeat_answered = p.probe_answered = false;
  p.heartbeat_ok = p.probe_ok = false;
  p.check_detail.clear();
  Emit(CheckCmd{p.check_id, pi, cfg.send_timeout});
}

void EngineCore::State::CompleteCheck(int pi, bool passed, TimePoint now) {
  Proc& p = procs[pi];
  auto before = p.health.Last();
  p.health.RecordCheck(passed, p.check_op, now);
  Note& n = Tell(Note::Kind::kCheckDone);
  n.process = pi;
  n.status = passed ? 1 : 0;
  n.seconds = std::chrono::duration<double>(now - p.check_started).count();
  n.text = p.check_detail;
  // Back after being down: it may have been restarted as another version of Umami.
  if (before == ProcessHealth::State::kDown && passed) p.batch = BatchRoute::kUnknown;
  if (before != p.health.Last() || before == ProcessHealth::State::kUnknown) {
    Note& c = Tell(passed ? Note::Kind::kProcessUp : Note::Kind::kProcessDown);
    c.process = pi;
    c.text = p.check_detail;
  }
  // The sends that failed before this check began are judged by it; those sent after it began
  // wait for the next one, which starts at once.
  std::vector<uint64_t> judged, waiting;
  for (uint64_t eid : p.checking) {
    auto it = held.find(eid);
    if (it == held.end() || it->second.stage != Stage::kChecking || it->second.process != pi) {
      continue;  // moved on meanwhile
    }
    (it->second.sent_op < p.check_op ? judged : waiting).push_back(eid);
  }
  p.checking.swap(waiting);
  bool later = !p.checking.empty();
  for (uint64_t eid : judged) {
    auto it = held.find(eid);
    if (it != held.end()) Decide(eid, it->second, passed, now);
  }
  if (later && p.check_id == 0 && mode == Mode::kRunning) StartCheck(pi, now);
}

void EngineCore::State::Decide(uint64_t eid, Held& h, bool passed, TimePoint now) {
  Proc& p = procs[h.process];
  // Only an event that never failed before may start or extend a run: a write fault shows in
  // events that fail at once, while retries of the same events (poison waiting out a fault that
  // was none) prove nothing new. Failures in an outage were not counted: those events count.
  // An answer about the event itself (Umami's validation) is no sign of a database that cannot
  // write: it neither counts toward the rule nor waits out a write fault.
  bool about_event = h.about == AnswerAbout::kEvent;
  bool fresh = h.failures == 0 && h.fault_parks == 0 && !about_event;
  if (passed && fresh && p.run.RecordFailure(h.lane.str(), now)) {
    Note& n = Tell(Note::Kind::kWriteFaultBegan);
    n.process = h.process;
    n.count = static_cast<int64_t>(p.run.visitors());
  }
  if (passed && fresh && shared_run.RecordFailure(h.lane.str(), now)) {
    Note& n = Tell(Note::Kind::kWriteFaultBegan);
    n.process = -1;  // every process: the database they share
    n.count = static_cast<int64_t>(shared_run.visitors());
  }
  // Umami's processes usually share one database: while another process is in a write fault,
  // a failure here counts only if this process stored something since that fault began.
  bool faulted = p.run.faulted() || shared_run.faulted();
  for (size_t j = 0; j < procs.size() && !faulted; ++j) {
    faulted = procs[j].run.faulted() && p.last_store < procs[j].run.since();
  }
  faulted = faulted && !about_event;
  auto d = replayer::Decide(passed, faulted, h.failures);
  switch (d.kind) {
    case Decision::Kind::kOutage: {
      Note& n = Tell(Note::Kind::kOutageRetried);
      n.process = h.process;
      n.seq = h.seq;
      lanes.ClearFailing(h.lane);  // the visitor's later events wait for Umami, not for poison
      MakeReady(eid, h);           // another process takes it, or it waits for this one
      break;
    }
    case Decision::Kind::kWriteFault: {
      Note& n = Tell(Note::Kind::kWriteFaultRetried);
      n.process = h.process;
      n.seq = h.seq;
      lanes.ClearFailing(h.lane);
      h.stage = Stage::kBackoff;
      Arm(eid, h, now + d.delay);
      if (!h.parked_write_fault) ++parked;
      h.parked_write_fault = true;
      ++h.fault_parks;
      break;
    }
    case Decision::Kind::kRetry: {
      h.failures = d.failures;
      h.stage = Stage::kBackoff;
      Arm(eid, h, now + d.delay);
      // The cap applies once the head failed twice: its first failure may be the first sign of
      // a write fault that the next few failures of other visitors reveal; the visitor's events
      // must not be cut off in those seconds.
      if (d.failures < 2) break;
      for (uint64_t over : lanes.MarkFailing(h.lane)) {
        auto o = held.find(over);
        if (o != held.end()) DeadLetter(over, o->second, kOverflowReason, kCodeOverflow, now);
      }
      break;
    }
    case Decision::Kind::kDeadLetter:
      h.failures = d.failures;
      DeadLetter(eid, h, kFailedReason, kCodeFailed, now);
      break;
  }
}

void EngineCore::State::WakeParked(TimePoint) {
  for (auto& [eid, h] : held) {
    if (h.stage == Stage::kBackoff && h.parked_write_fault) MakeReady(eid, h);
  }
}

void EngineCore::State::DeadLetter(uint64_t eid, Held& h, const std::string& reason,
                                   const std::string& code, TimePoint now) {
  h.dlq_reason = reason;
  h.dlq_code = code;
  h.stage = Stage::kDeadLettering;
  NewOp(eid, h);
  Emit(DeadLetterCmd{h.op, h.ref, reason, code, h.last_answer});
  Arm(eid, h, now + kDeadLetterAckWait);
}

void EngineCore::State::OnPublishedDeadLetter(uint64_t eid, Held& h, const PubOutcome& o,
                                              TimePoint now) {
  if (o.kind == PubOutcome::Kind::kStored) {
    // Only now, with the DLQ copy stored, may the origin go.
    Emit(AckCmd{h.ref, AckWhy::kDeadLettered});
    Note& n = Tell(Note::Kind::kDeadLettered);
    n.seq = h.seq;
    n.subject = h.subject;
    n.code = h.dlq_code;
    n.text = h.dlq_reason;
    n.detail = h.last_answer;
    Finish(eid, now);
    return;
  }
  bool too_large = o.kind == PubOutcome::Kind::kTooLarge;
  bool& noted = too_large ? dlq_too_large_noted : dlq_unavailable_noted;
  Note& n = Tell(Note::Kind::kDlqPublishFailed);
  n.seq = h.seq;
  n.code = too_large ? "too_large" : "unavailable";
  n.text = o.error;
  n.first = !noted;
  noted = true;
  h.stage = Stage::kDeadLetterWait;
  Arm(eid, h, now + (too_large ? kDeadLetterTooLargeRetry : kDeadLetterRetry));
}

}  // namespace replayer
