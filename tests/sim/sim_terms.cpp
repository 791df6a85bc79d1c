// The simulated instances' terms: who leads when, and how a term ends (a crash, a lost lease,
// a SIGTERM); and what the world knows of the faults under way that its checks ask about (how
// long every process has been out, whether the runbook's case holds).
#include <unordered_set>

#include "tests/sim/sim_internal.h"

namespace sim {

void World::Lead(int inst) {
  Instance& I = *inst_[inst];
  if (!I.alive || I.core || leader_ >= 0) return;
  leader_ = inst;
  ++I.epoch;
  I.refs.clear();
  I.sends.clear();
  I.lane_sends.clear();
  I.lane_first.clear();
  I.finishing.clear();
  I.dead_lettering.clear();
  I.sent_once.clear();
  I.site_unknown_until.clear();
  I.not_removed.clear();  // a new term, a new crash guard: the markers stay in KV
  I.stopping = false;
  I.core = std::make_unique<replayer::EngineCore>(sc_.core);
  I.guard_blocked = false;
  I.guard_unanswered.clear();
  ++stats_.takeovers;
  Note("leads", I.epoch, 0, inst);
  uint64_t epoch = I.epoch;
  Feed(inst, epoch, [this](replayer::EngineCore& c) { c.Start(now_); });
}

milliseconds World::OutageFor() const {
  TimePoint since = TimePoint{};
  for (int p = 0; p < sc_.processes; ++p) {
    TimePoint earliest = TimePoint::max();
    for (const auto& f : sc_.faults) {
      bool checks_fail =
          f.fault == Fault::kDown || f.fault == Fault::kHung || f.fault == Fault::kDbDown;
      if (checks_fail && (f.process < 0 || f.process == p) && now_ >= f.start && now_ < f.end) {
        earliest = std::min(earliest, f.start);
      }
    }
    if (earliest == TimePoint::max()) return milliseconds(0);
    since = std::max(since, earliest);
  }
  return std::chrono::duration_cast<milliseconds>(now_ - since);
}

bool World::RunbookCase() const {
  for (const auto& failures : write_failures_) {
    std::unordered_set<std::string> lanes;
    for (const auto& [at, lane] : failures) {
      if (now_ - at <= std::chrono::seconds(60)) lanes.insert(lane);
    }
    if (lanes.size() >= 3) return false;
  }
  return true;
}

void World::LeaseTick() {
  if (leader_ < 0 && now_ >= lease_free_at_) {
    // Whichever alive instance has no term under way; the one that did not lead last first
    // (Scenario::own_marker: the one that led last, and only it while it lives).
    for (int k = 0; k < 2; ++k) {
      int i = (last_leader_ + (sc_.own_marker ? 0 : 1) + k) % 2;
      if (sc_.own_marker && k == 1 && inst_[last_leader_]->alive) break;
      if (inst_[i]->alive && !inst_[i]->core) {
        last_leader_ = i;
        Lead(i);
        break;
      }
    }
  }
  if (failure_.empty() && !healed_done_) At(now_ + milliseconds(500), [this] { LeaseTick(); });
}

void World::CrashOrLose(int inst, InstanceAction action) {
  Instance& I = *inst_[inst];
  if (!I.alive) return;
  // The window in which a duplicate can still happen: a send under way, or stored and its guard
  // record not yet acked.
  auto excuse = [&] {
    for (const auto& [id, seqs] : I.sends) {
      for (uint64_t seq : seqs) ++events_[msgs_[seq - 1]->index].excuses;
    }
    for (uint64_t seq : I.finishing) ++events_[msgs_[seq - 1]->index].excuses;
    // A dead letter's publish under way: WEB_DLQ may store the copy with nobody left to hear
    // it, and the origin comes back to the next instance, which may store it (a replay of the
    // copy then finds its guard record).
    for (uint64_t seq : I.dead_lettering) ++events_[msgs_[seq - 1]->index].dlq_answer_lost;
  };
  switch (action) {
    case InstanceAction::kCrash: {
      ++stats_.crashes;
      Note("crash", I.refs.size(), 0, inst);
      excuse();
      I.alive = false;
      ++I.epoch;
      I.core.reset();
      I.refs.clear();
      I.sends.clear();
      I.lane_sends.clear();
      I.finishing.clear();
      I.dead_lettering.clear();
      if (leader_ == inst) {
        leader_ = -1;
        lease_free_at_ = now_ + sc_.lease_ttl;  // its key expires
      }
      At(now_ + milliseconds(rng_.Int(2000, 30'000)), [this, inst] {
        inst_[inst]->alive = true;
        inst_[inst]->process = ++processes_started_;
        ++inst_[inst]->epoch;
      });
      break;
    }
    case InstanceAction::kLeaseLoss: {
      if (leader_ != inst || !I.core) return;
      Note("lease lost", I.refs.size(), 0, inst);
      I.stopping = true;
      excuse();
      leader_ = -1;
      uint64_t epoch = I.epoch;
      // The other takes the lease once its key expired (this one stopped before that).
      lease_free_at_ = now_ + milliseconds(rng_.Int(3000, 12'000));
      Feed(inst, epoch, [this](replayer::EngineCore& c) { c.OnLeadershipLost(now_); });
      break;
    }
    case InstanceAction::kStop: {
      if (!I.core) return;
      Note("SIGTERM", I.refs.size(), 0, inst);
      I.stopping = true;
      uint64_t epoch = I.epoch;
      Feed(inst, epoch, [this](replayer::EngineCore& c) { c.OnStop(now_); });
      break;
    }
  }
}

}  // namespace sim
