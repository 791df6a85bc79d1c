// The simulated replayer instances: each runs an EngineCore, and every command it gives is
// checked against the ledger before the world carries it out.
#include "common/crash_guard.h"
#include "replayer/classifier.h"
#include "replayer/event.h"
#include "replayer/umami_reply.h"
#include "tests/sim/sim_internal.h"

namespace sim {
namespace {

constexpr const char* kOverflowReason =
    "more than 64 events of this visitor were held behind an event umami keeps failing";

bool PoisonSent(Kind k, Version v) {
  return k == Kind::kValidation ||
         (v == Version::k2_10 && (k == Kind::kIdentify || k == Kind::kLongUrl));
}

bool PoisonAtOnce(Kind k) {
  return k == Kind::kHalfWrite || k == Kind::kMalformed || k == Kind::kHeaderPoison ||
         k == Kind::kReaderKiller;
}

}  // namespace

void World::Feed(int inst, uint64_t epoch,
                 const std::function<void(replayer::EngineCore&)>& input) {
  Instance& I = *inst_[inst];
  if (!I.alive || I.epoch != epoch || !I.core || !failure_.empty()) return;
  input(*I.core);
  Execute(inst);
  CheckInstance(inst);
  if (I.core && I.core->Done()) {
    Note("term over", I.core->held(), 0, inst);
    I.core.reset();
    if (leader_ == inst) {
      // SIGTERM: the lease is deleted, the other instance leads at once.
      leader_ = -1;
      lease_free_at_ = now_ + milliseconds(500);
      // This one comes back after a restart.
      I.alive = false;
      ++I.epoch;
      At(now_ + milliseconds(rng_.Int(1000, 20'000)), [this, inst] {
        inst_[inst]->alive = true;
        inst_[inst]->process = ++processes_started_;
      });
    }
  }
}

void World::CheckInstance(int inst) {
  Instance& I = *inst_[inst];
  if (!I.core || !failure_.empty()) return;
  stats_.invariant_checks += 2;
  if (static_cast<size_t>(I.core->held()) != I.refs.size()) {
    Fail("the core counts " + std::to_string(I.core->held()) + " held messages, but " +
         std::to_string(I.refs.size()) + " deliveries are with it unanswered");
    return;
  }
  if (static_cast<size_t>(I.core->sends_in_flight()) > I.sends.size()) {
    Fail("the core counts more sends in flight than it made");
    return;
  }
  if (++I.steps % 128 == 0) {
    ++stats_.invariant_checks;
    if (auto why = I.core->SelfCheck(); !why.empty()) Fail("core self-check: " + why);
  }
}

void World::Execute(int inst) {
  Instance& I = *inst_[inst];
  I.core->Take(I.out);
  uint64_t epoch = I.epoch;
  for (const auto& n : I.out.notes) {
    if (n.kind == replayer::Note::Kind::kWriteFaultBegan) {
      Note("write fault began", 0, n.process, inst);
      CheckWriteFaultEvidence(n.process);
    }
    if (n.kind == replayer::Note::Kind::kWriteFaultEnded)
      Note("write fault ended", 0, n.process, inst);
    if (n.kind == replayer::Note::Kind::kStored) Note("stored (core)", n.seq, n.process, inst);
    if (n.kind != replayer::Note::Kind::kSendStuck) continue;
    // The core gave up a send its HTTP client never answered: from now on that send is not
    // the visitor's one in flight, and if Umami stores it after all, a retry stores it twice.
    for (auto it = I.sends.begin(); it != I.sends.end(); ++it) {
      if (it->second.front() != n.seq) continue;
      const EventRecord& r = events_[msgs_[n.seq - 1]->index];
      if (--I.lane_sends[r.lane] == 0) I.lane_sends.erase(r.lane);
      for (uint64_t seq : it->second) ++events_[msgs_[seq - 1]->index].excuses;
      I.sends.erase(it);
      break;
    }
  }
  for (auto& cmd : I.out.commands) {
    if (!failure_.empty()) return;
    ++stats_.invariant_checks;
    if (auto* f = std::get_if<replayer::FetchCmd>(&cmd)) {
      FetchFor(inst, *f, epoch);
    } else if (auto* s = std::get_if<replayer::SendCmd>(&cmd)) {
      std::vector<uint64_t> seqs = s->batch ? s->batch_seqs : std::vector<uint64_t>{s->stream_seq};
      if (s->batch && (seqs.size() < 2 || seqs.front() != s->stream_seq)) {
        Fail("a batch without its events (seq " + std::to_string(s->stream_seq) + ")");
        return;
      }
      const std::string& lane = events_[msgs_[s->stream_seq - 1]->index].lane;
      for (uint64_t seq : seqs) {
        const EventRecord& r = events_[msgs_[seq - 1]->index];
        if (PoisonAtOnce(r.kind)) {
          Fail(std::string("sent a ") + KindName(r.kind) + " event (seq " + std::to_string(seq) +
               "), which must go to WEB_DLQ without a send");
          return;
        }
        if (r.lane != lane) {
          Fail("a batch holds two visitors' events (seq " + std::to_string(seq) + ")");
          return;
        }
      }
      for (const auto& [k, v] : s->headers) {
        for (char c : v) {
          if ((static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7f) {
            Fail("a header value with a control character went out: " + k);
            return;
          }
        }
        if (k == "x-umami-cache" && !replayer::UsableToken(v)) {
          Fail("a cache token that is not one went out (" + std::to_string(v.size()) + " bytes)");
          return;
        }
      }
      for (const auto& [id, since] : I.guard_unanswered) {
        if (now_ - since > milliseconds(1000)) {
          Fail("a send started while a guard record has waited " +
               std::to_string(std::chrono::duration_cast<milliseconds>(now_ - since).count()) +
               " ms for an answer (seq " + std::to_string(s->stream_seq) + ")");
          return;
        }
      }
      if (I.guard_blocked && !I.finishing.empty()) {
        Fail(
            "a send started while the duplicate guard cannot record (a guard write failed and "
            "none has been written since), seq " +
            std::to_string(s->stream_seq));
        return;
      }
      if (I.lane_sends[lane] > 0) {
        Fail("two sends of one visitor in flight at once (seq " + std::to_string(s->stream_seq) +
             ")");
        return;
      }
      // Stream order within one instance: first sends of first deliveries go in sequence (a
      // batch's events in its body's order).
      for (uint64_t seq : seqs) {
        uint64_t delivered = msgs_[seq - 1]->deliveries;
        if (delivered == 1 && I.sent_once.insert(seq).second) {
          auto& last = I.lane_first[lane];
          if (seq < last) {
            Fail("visitor order broken: seq " + std::to_string(seq) + " sent after " +
                 std::to_string(last));
            return;
          }
          last = seq;
        }
        ++events_[msgs_[seq - 1]->index].sends;
      }
      if (s->batch) {
        ++stats_.batches;
        stats_.batched += static_cast<int64_t>(seqs.size());
      }
      ++I.lane_sends[lane];
      I.sends[s->send_id] = seqs;
      ++stats_.sends;
      Note(s->batch ? "send a batch" : "send", s->stream_seq, s->process, inst);
      if (s->batch) {
        HttpBatch(inst, epoch, *s);
      } else {
        HttpSend(inst, epoch, *s);
      }
    } else if (auto* c = std::get_if<replayer::CheckCmd>(&cmd)) {
      Note("check", c->process, c->check_id, inst);
      HttpCheck(inst, epoch, *c);
    } else if (auto* g = std::get_if<replayer::GuardLookupCmd>(&cmd)) {
      bool down = FaultActive(Fault::kKvDown, -1);
      bool found = guard_.count(g->key) != 0;
      uint64_t id = g->lookup_id;
      At(now_ + milliseconds(rng_.Int(0, 3)), [this, inst, epoch, id, down, found] {
        Feed(inst, epoch, [this, id, down, found](replayer::EngineCore& core) {
          core.OnGuardAnswer(id,
                             down    ? replayer::Lookup::kError
                             : found ? replayer::Lookup::kFound
                                     : replayer::Lookup::kAbsent,
                             now_);
        });
      });
    } else if (auto* v = std::get_if<replayer::VisitLookupCmd>(&cmd)) {
      bool down = FaultActive(Fault::kKvDown, -1);
      auto it = visit_kv_.find(v->key);
      std::string value = it == visit_kv_.end() ? "" : it->second;
      bool found = it != visit_kv_.end();
      std::string lane = v->lane;
      At(now_ + milliseconds(rng_.Int(0, 3)), [this, inst, epoch, lane, value, down, found] {
        Feed(inst, epoch, [&](replayer::EngineCore& core) {
          core.OnVisitAnswer(lane,
                             down    ? replayer::Lookup::kError
                             : found ? replayer::Lookup::kFound
                                     : replayer::Lookup::kAbsent,
                             value, now_);
        });
      });
    } else if (auto* a = std::get_if<replayer::AckCmd>(&cmd)) {
      auto it = I.refs.find(a->ref);
      if (it == I.refs.end()) {
        Fail("an ack for a delivery the instance does not hold");
        return;
      }
      uint64_t seq = it->second.seq;
      I.refs.erase(it);
      const EventRecord& r = events_[msgs_[seq - 1]->index];
      std::string key = replayer::KvSafe("e" + std::to_string(seq));
      bool ok = true;
      switch (a->why) {
        case replayer::AckWhy::kStored:
          ok = r.rows > 0 && guard_.count(key) != 0;
          break;
        case replayer::AckWhy::kStoredUnguarded:
          ok = r.rows > 0 && inst_[inst]->stopping;
          break;
        case replayer::AckWhy::kDeadLettered:
          ok = dlq_ids_.count(seq) != 0;
          break;
        case replayer::AckWhy::kDuplicate:
          ok = guard_.count(key) != 0 || dlq_ids_.count(seq) != 0 || r.dropped > 0;
          break;
        case replayer::AckWhy::kDroppedByUmami:
          ok = r.kind == Kind::kBot;
          break;
      }
      if (!ok) {
        Fail("seq " + std::to_string(seq) + " acked before it was stored (and guarded), " +
             "dead-lettered or dropped by Umami");
        return;
      }
      if (a->why == replayer::AckWhy::kDroppedByUmami) ++events_[msgs_[seq - 1]->index].dropped;
      I.finishing.erase(seq);
      I.dead_lettering.erase(seq);
      Note("ack", seq, static_cast<uint64_t>(a->why), inst);
      At(now_ + milliseconds(rng_.Int(0, 1)), [this, seq] { Ack(seq); });
    } else if (auto* p = std::get_if<replayer::InProgressCmd>(&cmd)) {
      auto it = I.refs.find(p->ref);
      if (it == I.refs.end()) {
        Fail("an in-progress ack for a delivery the instance does not hold");
        return;
      }
      uint64_t seq = it->second.seq;
      At(now_ + milliseconds(rng_.Int(0, 1)), [this, seq] { InProgress(seq); });
    } else if (auto* n = std::get_if<replayer::NakCmd>(&cmd)) {
      auto it = I.refs.find(n->ref);
      if (it == I.refs.end()) {
        Fail("a nak for a delivery the instance does not hold");
        return;
      }
      uint64_t seq = it->second.seq;
      I.refs.erase(it);
      auto delay = n->delay;
      At(now_ + milliseconds(rng_.Int(0, 1)), [this, seq, delay] { Nak(seq, delay); });
    } else if (auto* f2 = std::get_if<replayer::ForgetCmd>(&cmd)) {
      if (I.refs.erase(f2->ref) == 0) {
        Fail("forgot a delivery the instance does not hold");
        return;
      }
    } else if (auto* pg = std::get_if<replayer::PutGuardCmd>(&cmd)) {
      bool down = FaultActive(Fault::kKvDown, -1);
      std::string key = pg->key;
      uint64_t id = pg->pub_id;
      I.guard_unanswered[id] = now_;
      auto lat = milliseconds(rng_.Int(0, 3));
      if (down) {
        // No answer within the client's timeout; the write may still have been applied.
        bool applied = rng_.Chance(0.3);
        At(now_ + lat, [this, key, applied] {
          if (applied) guard_[key] = 1;
        });
        At(now_ + milliseconds(5000), [this, inst, epoch, id] {
          Feed(inst, epoch, [this, inst, id](replayer::EngineCore& core) {
            inst_[inst]->guard_blocked = true;
            inst_[inst]->guard_unanswered.erase(id);
            core.OnPublished(id, {replayer::PubOutcome::Kind::kFailed, "timeout"}, now_);
          });
        });
      } else {
        At(now_ + lat, [this, key, inst, epoch, id] {
          guard_[key] = 1;
          At(now_ + milliseconds(rng_.Int(0, 2)), [this, inst, epoch, id] {
            Feed(inst, epoch, [this, inst, id](replayer::EngineCore& core) {
              inst_[inst]->guard_blocked = false;
              inst_[inst]->guard_unanswered.erase(id);
              core.OnPublished(id, {}, now_);
            });
          });
        });
      }
    } else if (auto* pv = std::get_if<replayer::PutVisitCmd>(&cmd)) {
      if (!FaultActive(Fault::kKvDown, -1)) visit_kv_[pv->key] = pv->value;
    } else if (auto* d = std::get_if<replayer::DeadLetterCmd>(&cmd)) {
      auto it = I.refs.find(d->ref);
      if (it == I.refs.end()) {
        Fail("a dead letter for a delivery the instance does not hold");
        return;
      }
      uint64_t seq = it->second.seq;
      uint64_t id = d->pub_id;
      std::string reason = d->reason;
      I.dead_lettering.insert(seq);
      if (FaultActive(Fault::kDlqDown, -1)) {
        // Refused, or (a server that crashed after storing) stored with the answer lost.
        bool stored_anyway = rng_.Chance(0.3);
        if (stored_anyway) {
          ++events_[msgs_[seq - 1]->index].dlq_answer_lost;
          At(now_ + milliseconds(rng_.Int(0, 3)),
             [this, seq, reason] { DeadLetterStored(seq, reason); });
        }
        At(now_ + milliseconds(stored_anyway ? 5000 : rng_.Int(1, 5)), [this, inst, epoch, id] {
          Feed(inst, epoch, [this, id](replayer::EngineCore& core) {
            core.OnPublished(id, {replayer::PubOutcome::Kind::kFailed, "no stream"}, now_);
          });
        });
      } else {
        At(now_ + milliseconds(rng_.Int(0, 3)), [this, seq, reason, inst, epoch, id] {
          DeadLetterStored(seq, reason);
          At(now_ + milliseconds(rng_.Int(0, 2)), [this, inst, epoch, id] {
            Feed(inst, epoch,
                 [this, id](replayer::EngineCore& core) { core.OnPublished(id, {}, now_); });
          });
        });
      }
    } else if (auto* t = std::get_if<replayer::ArmTimerCmd>(&cmd)) {
      I.wake_at = t->at;
      TimePoint at = t->at;
      At(at, [this, inst, epoch, at] {
        if (inst_[inst]->wake_at != at) return;  // moved since
        Feed(inst, epoch, [this](replayer::EngineCore& core) { core.OnTimer(now_); });
      });
    }
  }
}

void World::DeadLetterStored(uint64_t seq, const std::string& reason) {
  auto [it, fresh] = dlq_ids_.try_emplace(seq, now_);
  // The copy's message id derives from the origin's sequence: within the duplicate window (2
  // minutes) a second publish stores nothing.
  if (!fresh && now_ - it->second < std::chrono::minutes(2)) return;
  it->second = now_;
  Note("dead letter stored", seq);
  EventRecord& r = events_[msgs_[seq - 1]->index];
  ++r.dlq;
  ++stats_.dead_lettered;
  ++stats_.invariant_checks;
  if (r.dlq == 1) r.dlq_reason = reason;
  if ((r.kind == Kind::kReaderKiller) != (reason == common::crash_guard::kReason)) {
    Fail(std::string("a ") + KindName(r.kind) + " event (seq " + std::to_string(seq) +
         ") dead-lettered with the reason: " + reason);
    return;
  }
  if ((r.kind == Kind::kUnknownSite) != (reason.rfind("umami does not know website ", 0) == 0)) {
    Fail(std::string("a ") + KindName(r.kind) + " event (seq " + std::to_string(seq) +
         ") dead-lettered with the reason: " + reason);
    return;
  }
  if (r.kind == Kind::kUnknownSite) return;
  bool good = !PoisonSent(r.kind, sc_.version) && !PoisonAtOnce(r.kind);
  if (!good) {
    if (PoisonSent(r.kind, sc_.version) && reason != replayer::kFailedReason &&
        reason != kOverflowReason) {
      Fail("poison dead-lettered with an unexpected reason: " + reason);
    }
    return;
  }
  // Behind a poison head, the visitor's excess goes to WEB_DLQ by design, unless Umami has been
  // down long enough that the head must have been tried again and found Umami down (the cap is
  // lifted then): its longest backoff (24 s), a send that hangs until the engine gives it up
  // (send timeout + 5 s), then a check given up as late (send timeout + 5 s).
  bool behind_poison = reason == kOverflowReason && poison_lanes_.count(r.lane) != 0;
  auto found_down_by = std::chrono::seconds(24 + 5 + 5 + 2) + 2 * sc_.core.send_timeout;
  if (behind_poison && OutageFor() > found_down_by) {
    Fail(std::string("a good event (") + KindName(r.kind) + ", seq " + std::to_string(seq) +
         ") was dead-lettered as overflow while every Umami process has been down for a while");
    return;
  }
  if (behind_poison) return;
  if ((reason == replayer::kFailedReason || reason == kOverflowReason) && RunbookCase()) {
    ++stats_.good_dead_lettered_runbook;
    return;
  }
  Fail(std::string("a good event (") + KindName(r.kind) + ", seq " + std::to_string(seq) +
       ") was dead-lettered: " + reason);
}

}  // namespace sim
