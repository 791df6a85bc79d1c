// The engine core's batches: one visitor's consecutive events in one POST /api/batch where the
// Umami process has it (3.x), each event keeping the meaning it has alone (docs/replayer.md,
// "Batches").
#include "replayer/engine_core_state.h"

namespace replayer {

void EngineCore::State::BatchFor(const Held& h, int p, const std::string& token, TimePoint now) {
  batch_scratch.clear();
  // Only a head that never failed: a failing head goes alone, so Umami never stores the events
  // behind an event already known to fail. Only with the visit's token: every event then lands
  // in the visit under way, as it would alone. An event without one begins a visit whose token
  // its followers would need, and a batch's events all carry the first one's headers.
  if (cfg.batch_max < 2 || token.empty() || h.failures > 0 || h.fault_parks > 0) return;
  Proc& q = procs[p];
  if (q.batch == BatchRoute::kNo) {
    if (now - q.batch_no_at < kBatchRelearn) return;
    q.batch = BatchRoute::kUnknown;  // asked again: the process may have been upgraded
  }
  const VisitState* v = visits.Find(h.lane, now);
  if (v == nullptr) return;
  lanes.Behind(h.lane, static_cast<size_t>(cfg.batch_max - 1), lane_scratch);
  int64_t bytes = h.bytes;
  for (uint64_t id : lane_scratch) {
    auto it = held.find(id);
    if (it == held.end()) break;
    const Held& f = it->second;
    // In lane order, up to the first event that cannot ride along: it and everything behind it
    // wait for a later send.
    if (f.stage != Stage::kWaiting || f.failures > 0 || f.fault_parks > 0) break;
    // The same client: Umami 3.x takes the client from the outer request's headers where the
    // payload does not name it (an ip that is not IPv4), and judges bots by the user agent.
    if (f.ev.ip != h.ev.ip || f.ev.user_agent != h.ev.user_agent) break;
    // The same visit: the rule of "Visits" holds for each event (no batch crosses its end).
    if (!VisitStates::Continues(*v, f.ev.accepted_at_ms)) break;
    if (bytes + f.bytes > kBatchMaxBytes) break;
    bytes += f.bytes;
    batch_scratch.push_back(id);
  }
}

void EngineCore::State::Unbatch(Held& head) {
  for (uint64_t id : head.batch) {
    auto it = held.find(id);
    if (it == held.end() || it->second.stage != Stage::kBatched) continue;
    it->second.stage = Stage::kWaiting;
    it->second.process = -1;
    ++it->second.gen;
  }
  head.batch.clear();
}

void EngineCore::State::SetBatchRoute(int pi, BatchRoute route, const std::string& why,
                                      TimePoint now) {
  Proc& p = procs[pi];
  p.batch = route;
  if (route == BatchRoute::kNo) p.batch_no_at = now;
  if (route != p.batch_said) {
    p.batch_said = route;
    Note& n = Tell(Note::Kind::kBatchRoute);
    n.process = pi;
    n.status = route == BatchRoute::kYes ? 1 : 0;
    n.text = why;
  }
}

void EngineCore::State::OnBatchAnswer(uint64_t eid, Held& h, const HttpAnswer& a, TimePoint now) {
  int pi = h.process;
  Proc& p = procs[pi];
  std::vector<uint64_t> ids;
  ids.reserve(h.batch.size() + 1);
  ids.push_back(eid);
  ids.insert(ids.end(), h.batch.begin(), h.batch.end());
  EndSend(h);
  p.send_stuck_noted = false;
  // Only a batch reply is a batch Umami answered (the batch counters count those); a 404/405
  // (no route) or a 2xx of another shape goes again through /api/send.
  const bool answered_2xx = a.status >= 200 && a.status < 300;
  BatchReply r = answered_2xx ? ParseBatchReply(a.body, ids.size()) : BatchReply{};
  Note& sent = Tell(Note::Kind::kSendDone);
  sent.process = pi;
  sent.seconds = a.seconds;
  sent.count = static_cast<int64_t>(ids.size());
  sent.status = r.readable ? 1 : 0;
  if (BatchRouteMissing(a.status)) {
    // No such route: nothing was stored. Every event waits again, uncharged; the head goes on
    // through /api/send (a downgraded Umami, or 2.10).
    SetBatchRoute(pi, BatchRoute::kNo, "POST /api/batch answered " + std::to_string(a.status), now);
    Unbatch(h);
    MakeReady(eid, h);
    return;
  }
  if (a.status < 200 || a.status >= 300) {
    // Failed as a whole (an outage, a timeout): the head's failure, as if it had been sent alone;
    // the events behind it wait for it, uncharged.
    Unbatch(h);
    h.last_answer = AnswerExcerpt(a.status, a.body, a.error);
    Note& n = Tell(Note::Kind::kSendFailed);
    n.process = pi;
    n.status = a.status;
    n.seq = h.seq;
    n.text = h.last_answer;
    OnSendFailed(eid, h, a.status, a.body, now);
    return;
  }
  if (!r.readable) {
    // A 2xx that is no batch reply (a proxy's page): which events Umami stored is unknown. They
    // go again through /api/send, where a 2xx is understood: a stored one is stored twice,
    // never lost.
    SetBatchRoute(pi, BatchRoute::kNo, r.problem, now);
    Unbatch(h);
    MakeReady(eid, h);
    return;
  }
  SetBatchRoute(pi, BatchRoute::kYes, "", now);
  if (!r.token_problem.empty()) {
    Note& n = Tell(Note::Kind::kTokenIgnored);
    n.process = pi;
    n.text = r.token_problem;
    n.first = !p.token_noted;
    p.token_noted = true;
  }
  h.batch.clear();
  SendReply stored;
  stored.cache_token = r.cache_token;
  size_t next_failed = 0;
  bool failed_before = false;
  for (size_t i = 0; i < ids.size(); ++i) {
    auto it = held.find(ids[i]);
    if (it == held.end()) continue;
    Held& e = it->second;
    if (i > 0 && e.stage != Stage::kBatched) continue;  // moved on meanwhile (none should)
    if (next_failed < r.failed.size() && r.failed[next_failed].index == i) {
      const auto& f = r.failed[next_failed++];
      e.last_answer = f.excerpt;
      Note& n = Tell(Note::Kind::kSendFailed);
      n.process = pi;
      n.status = f.status;
      n.seq = e.seq;
      n.text = e.last_answer;
      if (!failed_before) {
        // Every event before it is finished, so it is the lane's head: its failure is judged
        // as a send's would be.
        failed_before = true;
        e.stage = Stage::kSending;  // OnFailed's starting point, as after EndSend
        OnSendFailed(ids[i], e, f.status, f.excerpt, now);
      } else {
        // Behind a failed event: it waits for it, its failure uncharged (the same visitor's).
        e.stage = Stage::kWaiting;
        e.process = -1;
        ++e.gen;
      }
    } else if (!r.stored_any) {
      // Processed and nothing stored (no token came back): the visitor is a bot (the batch's
      // events share one user agent, which is what Umami judges).
      Tell(Note::Kind::kDroppedByUmami).seq = e.seq;
      Emit(AckCmd{e.ref, AckWhy::kDroppedByUmami});
      Finish(ids[i], now);
    } else {
      // Stored; after a failed event of the batch it is stored out of order (Umami went on).
      OnStored(ids[i], e, stored, now);
    }
  }
}

}  // namespace replayer
