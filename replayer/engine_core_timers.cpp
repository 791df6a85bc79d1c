// The engine core's timers: one live entry per held event (Arm), what each stage does when its
// time comes (Fire), and the periodic work of Tick (in-progress acks, health checks, probes).
#include <algorithm>

#include "replayer/engine_core_state.h"

namespace replayer {

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

}  // namespace replayer
