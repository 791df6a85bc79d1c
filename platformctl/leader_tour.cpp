#include "platformctl/leader_tour.h"

#include <algorithm>

namespace platformctl::dlq {

using nats_admin::Replica;

bool Usable(const Replica& r) { return r.leader || (r.current && !r.offline); }

common::Result<TourResult> WalkLeaders(LeaderTourOps& ops, const TourLimits& limits) {
  TourResult out;
  const auto moves_until = ops.Now() + limits.moves_wait;
  while (true) {
    auto now = ops.ReadWithLeader();
    if (!now) return now.error();
    out.last = std::move(*now);
    const std::string leader = out.last.Leader();
    if (!leader.empty() && !out.asked.count(leader)) {
      if (auto s = ops.Ask(leader); !s) return s.error();
      auto again = ops.Read();
      if (!again) return again.error();
      // Moved meanwhile: the answer may have come from a replica that was no longer leader.
      if (again->Leader() == leader) out.asked.insert(leader);
    }
    out.final_leader = leader;
    const bool all =
        std::all_of(out.last.peers.begin(), out.last.peers.end(),
                    [&](const Replica& p) { return !Usable(p) || out.asked.count(p.name) > 0; });
    if (all || out.moves >= limits.max_moves || ops.Now() >= moves_until || ops.Stopping()) {
      return out;
    }
    if (auto s = ops.StepDown(); !s) return s.error();
    ++out.moves;
    auto moved = ops.WaitMovedFrom(leader);
    if (!moved) return moved.error();
  }
}

}  // namespace platformctl::dlq
