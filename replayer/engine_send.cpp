// The engine thread's work: lanes, sends, health checks, decisions, dead-letters, acks.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <thread>

#include "common/dead_letter.h"
#include "common/timefmt.h"
#include "common/topology.h"
#include "replayer/engine_state.h"
#include "replayer/umami_reply.h"

namespace replayer {

namespace {
constexpr const char* kOverflowReason =
    "more than 64 events of this visitor were held behind an event umami keeps failing";
constexpr const char* kCodeFailed = "failed_4_times";
constexpr const char* kCodeOverflow = "visitor_overflow";

std::string FailureClass(int status) {
  if (status == 0) return "network";
  if (status >= 400 && status < 500) return "4xx";
  if (status >= 500) return "5xx";
  return "other";
}
}  // namespace

void Engine::State::DrainInbox(TimePoint now) {
  // Swapped with the inbox, so both sides keep their capacity from one turn to the next.
  std::vector<NewEvent>& events = drain_events;
  std::vector<PubDone>& done = drain_done;
  {
    std::lock_guard lock(inbox_mu);
    events.swap(inbox_events);
    done.swap(inbox_done);
  }
  for (auto& e : events) Admit(std::move(e), now);
  // Acked messages are freed together after the loop: nats.c hands each freed message to its
  // collector thread, and wakes that thread once for a burst instead of once per message.
  std::vector<core::Message>& acked = drain_acked;
  for (auto& d : done) {
    if (d.tag == 0) {
      if (!d.status) spdlog::warn("visit state not saved: {}", d.status.error().message);
      continue;
    }
    auto it = held.find(d.tag);
    if (it == held.end()) continue;
    if (it->second.stage == Stage::kDeadLettering) {
      OnDeadLettered(d.tag, it->second, d.status, now);
      continue;
    }
    if (it->second.stage != Stage::kFinishing) continue;
    if (!d.status) {
      spdlog::warn("duplicate guard record for {} failed, writing it again: {}", it->second.ev.id,
                   d.status.error().message);
      Backoff(d.tag, it->second, now + milliseconds(1000));
      it->second.stage = Stage::kFinishing;  // the timer rewrites the guard, not the send
      continue;
    }
    // The guard record is stored: a redelivery from here on is recognised. Now ack.
    if (auto st = it->second.msg.AckOn(*acks_nats); !st) {
      spdlog::warn("ack of stored seq {} failed (the guard covers its redelivery): {}",
                   it->second.msg.stream_seq(), st.error().message);
    }
    finished.Add(it->second.msg.stream_seq());
    acked.push_back(std::move(it->second.msg));
    held.erase(it);
    held_count.fetch_sub(1);
  }
  if (!done.empty()) room_cv.notify_one();
  acked.clear();
  events.clear();
  done.clear();
}

void Engine::State::Admit(NewEvent e, TimePoint now) {
  if (e.msg.num_delivered() > 1) {
    // The intake counted this message as held; it is not a new one in either case below.
    auto not_new = [&] {
      held_count.fetch_sub(1);
      room_cv.notify_one();
    };
    // The server gave us again a message we still hold (its ack wait ran out, or a nak of an
    // older delivery reached it): answer the newest delivery, and never send the event twice.
    for (auto& [held_id, held_event] : held) {
      if (held_event.msg.stream_seq() != e.msg.stream_seq()) continue;
      held_event.msg = std::move(e.msg);
      held_event.touched = now;  // the new delivery's ack wait starts now
      not_new();
      return;
    }
    // Finished here after the intake read the guard (its record was not there yet): ack it.
    if (finished.Contains(e.msg.stream_seq())) {
      if (auto st = e.msg.AckOn(*acks_nats); !st) {
        spdlog::warn("ack of redelivered seq {} failed: {}", e.msg.stream_seq(),
                     st.error().message);
      }
      m.duplicates_skipped.Inc();
      not_new();
      return;
    }
  }
  uint64_t id = next_id++;
  Held h{std::move(e.msg), std::move(e.ev), {}, Stage::kWaiting, 0, false, -1, {}, {}, {}, {}, {}};
  h.lane = h.ev.LaneKey();
  h.touched = now;
  auto added = lanes.Add(h.lane, id);
  auto [it, inserted] = held.emplace(id, std::move(h));
  if (added.is_head) MakeReady(id, it->second);
  for (uint64_t over : added.overflow) {
    auto o = held.find(over);
    if (o != held.end()) DeadLetter(over, o->second, kOverflowReason, kCodeOverflow, now);
  }
}

void Engine::State::MakeReady(uint64_t id, Held& h) {
  h.stage = Stage::kReady;
  h.parked_write_fault = false;  // whatever made it ready, it no longer waits for a write fault
  ready.push_back(id);
}

void Engine::State::Backoff(uint64_t id, Held& h, TimePoint at) {
  h.stage = Stage::kBackoff;
  h.next_at = at;
  timers.emplace(at, id);
}

int Engine::State::PickProcess() const {
  int best = -1;
  for (int i = 0; i < static_cast<int>(processes.size()); ++i) {
    const auto& p = processes[i];
    if (p.health.Last() != ProcessHealth::State::kUp) continue;
    if (p.in_flight >= cfg.sends_per_process) continue;
    if (best < 0 || p.in_flight < processes[best].in_flight) best = i;
  }
  return best;
}

void Engine::State::Dispatch(TimePoint) {
  while (!ready.empty()) {
    uint64_t id = ready.front();
    auto it = held.find(id);
    if (it == held.end() || it->second.stage != Stage::kReady) {
      ready.pop_front();
      continue;
    }
    int sends = 0;
    for (const auto& p : processes) sends += p.in_flight;
    if (sends >= cfg.workers) return;
    int p = PickProcess();
    if (p < 0) return;  // every process is down or busy: the events wait, the checks go on
    ready.pop_front();
    Send(id, it->second, p);
  }
}

void Engine::State::Send(uint64_t id, Held& h, int p) {
  HttpRequest r;
  r.tag = id;
  r.url = processes[p].send_url;
  r.post = true;
  r.body = BuildSendBody(h.ev);
  r.timeout = cfg.send_timeout;
  r.headers.emplace_back("Content-Type", "application/json");
  // Umami 2.10 reads the client from these headers; 2.16+ reads the payload's ip/userAgent.
  if (!h.ev.user_agent.empty()) r.headers.emplace_back("User-Agent", h.ev.user_agent);
  if (!h.ev.ip.empty()) r.headers.emplace_back("X-Forwarded-For", h.ev.ip);
  auto token = visit_cache.Lookup(h.lane);
  if (token && !token->empty()) r.headers.emplace_back("x-umami-cache", *token);
  h.stage = Stage::kSending;
  h.process = p;
  processes[p].in_flight++;
  http.Submit(std::move(r));
}

void Engine::State::OnResponse(HttpResponse r, TimePoint now) {
  if (r.tag & kCheckTag) {
    OnCheck(r, now);
    return;
  }
  auto it = held.find(r.tag);
  if (it == held.end()) return;
  Held& h = it->second;
  Process& p = processes[h.process];
  p.in_flight--;
  p.send_seconds->Observe(r.seconds);
  if (r.status >= 200 && r.status < 300) {
    OnStored(r.tag, h, r.body, now);
    return;
  }
  m.send_failures.With({p.url, FailureClass(r.status)}).Inc();
  h.last_answer = AnswerExcerpt(r.status, r.body, r.error);
  spdlog::debug("send of {} to {} failed: {}", h.ev.id, p.url, h.last_answer);
  OnFailed(r.tag, h, now);
}

void Engine::State::OnStored(uint64_t id, Held& h, const std::string& body, TimePoint now) {
  auto reply = ParseSendReply(body);
  if (reply.kind == SendReply::Kind::kDroppedBot) {
    m.dropped_by_umami.Inc();
    (void)h.msg.AckOn(*acks_nats);
    Finish(id, h);
    return;
  }
  m.stored.Inc();
  double now_s = static_cast<double>(core::NowUnixNs()) / 1e9;
  m.last_stored_timestamp.Set(now_s);
  m.age_at_store_seconds.Observe(now_s - static_cast<double>(h.ev.accepted_at_ms) / 1000.0);
  if (processes[h.process].write_fault.RecordStored(now)) {
    spdlog::info("umami process {} stores again: write fault over, parked events retry now",
                 processes[h.process].url);
    m.write_fault.With({processes[h.process].url}).Set(0);
    WakeWriteFaultParked();
  }
  if (!reply.cache_token.empty() && visit_cache.Set(h.lane, reply.cache_token)) {
    core::OutMessage put;
    put.subject = "$KV." + std::string(core::topology::kVisitStateBucket) + "." +
                  VisitKey(h.ev.website, h.ev.visitor);
    put.data = reply.cache_token;
    (void)publisher->Publish(put, 0);
  }
  // The visitor's next event may go now: this one is in Umami.
  auto next = lanes.PopHead(h.lane);
  if (next) {
    auto n = held.find(*next);
    if (n != held.end() && n->second.stage == Stage::kWaiting) MakeReady(*next, n->second);
  }
  PublishGuard(id, h, now);
}

void Engine::State::PublishGuard(uint64_t id, Held& h, TimePoint now) {
  core::OutMessage put;
  put.subject = "$KV." + std::string(core::topology::kStoredIdsBucket) + "." + KvSafe(h.ev.id);
  put.data = std::to_string(h.msg.stream_seq());
  h.stage = Stage::kFinishing;
  h.next_at = now + kGuardAckWait;
  if (auto st = publisher->Publish(put, id); !st) {
    spdlog::warn("duplicate guard record for {} not sent, retrying: {}", h.ev.id,
                 st.error().message);
    h.next_at = now + milliseconds(1000);
  }
  timers.emplace(h.next_at, id);
}

void Engine::State::OnFailed(uint64_t id, Held& h, TimePoint now) {
  Process& p = processes[h.process];
  auto fresh = p.health.Fresh(now);
  if (fresh != ProcessHealth::State::kUnknown) {
    Decide(id, h, fresh == ProcessHealth::State::kUp, now);
    return;
  }
  h.stage = Stage::kChecking;
  if (!p.health.check_running) StartCheck(h.process, now);
}

void Engine::State::StartCheck(int pi, TimePoint now) {
  Process& p = processes[pi];
  p.health.check_running = true;
  p.answers = 0;
  p.heartbeat_ok = p.probe_ok = false;
  p.last_check_started = now;
  HttpRequest hb;
  hb.tag = kCheckTag | (static_cast<uint64_t>(pi) << 1);
  hb.url = p.url + "/api/heartbeat";
  hb.timeout = milliseconds(3000);
  http.Submit(std::move(hb));
  HttpRequest probe;
  probe.tag = kCheckTag | (static_cast<uint64_t>(pi) << 1) | 1;
  probe.url = p.url + "/api/send";
  probe.post = true;
  probe.body = ProbeBody();
  probe.timeout = milliseconds(5000);
  probe.headers.emplace_back("Content-Type", "application/json");
  probe.headers.emplace_back(
      "User-Agent", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/120 Safari/537.36");
  http.Submit(std::move(probe));
}

void Engine::State::OnCheck(const HttpResponse& r, TimePoint now) {
  int pi = static_cast<int>((r.tag & ~kCheckTag) >> 1);
  bool is_probe = (r.tag & 1) != 0;
  Process& p = processes[pi];
  if (is_probe)
    p.probe_ok = ProbePassed(r.status, r.body);
  else
    p.heartbeat_ok = HeartbeatPassed(r.status);
  if (++p.answers < 2) return;
  bool passed = p.heartbeat_ok && p.probe_ok;
  auto before = p.health.Last();
  p.health.RecordCheck(passed, now);
  p.health.check_running = false;
  m.process_up.With({p.url}).Set(passed ? 1 : 0);
  if (before != p.health.Last()) {
    if (passed)
      spdlog::info("umami process {} passes its health checks", p.url);
    else
      spdlog::warn("umami process {} fails its health checks: treated as down", p.url);
  }
  std::vector<uint64_t> waiting;
  for (auto& [id, h] : held) {
    if (h.stage == Stage::kChecking && h.process == pi) waiting.push_back(id);
  }
  for (uint64_t id : waiting) {
    auto it = held.find(id);
    if (it != held.end()) Decide(id, it->second, passed, now);
  }
}

void Engine::State::Decide(uint64_t id, Held& h, bool passed, TimePoint now) {
  Process& p = processes[h.process];
  if (passed && p.write_fault.RecordFailure(h.lane, now)) {
    spdlog::warn(
        "umami process {} cannot write (failures from several visitors while its checks "
        "pass): failures no longer count, retries every 30 s",
        p.url);
    m.write_fault.With({p.url}).Set(1);
  }
  auto d = replayer::Decide(passed, p.write_fault.faulted(), h.failures);
  switch (d.kind) {
    case Decision::Kind::kOutage:
      m.outage_retries.Inc();
      lanes.ClearFailing(h.lane);  // the visitor's later events wait for Umami, not for poison
      MakeReady(id, h);            // another process takes it, or it waits for this one
      break;
    case Decision::Kind::kWriteFault:
      m.write_fault_retries.Inc();
      lanes.ClearFailing(h.lane);
      h.parked_write_fault = true;
      Backoff(id, h, now + d.delay);
      break;
    case Decision::Kind::kRetry: {
      h.failures = d.failures;
      Backoff(id, h, now + d.delay);
      for (uint64_t over : lanes.MarkFailing(h.lane)) {
        auto o = held.find(over);
        if (o != held.end()) DeadLetter(over, o->second, kOverflowReason, kCodeOverflow, now);
      }
      break;
    }
    case Decision::Kind::kDeadLetter:
      h.failures = d.failures;
      DeadLetter(id, h, kFailedReason, kCodeFailed, now);
      break;
  }
}

void Engine::State::WakeWriteFaultParked() {
  for (auto& [id, h] : held) {
    if (h.stage == Stage::kBackoff && h.parked_write_fault) MakeReady(id, h);
  }
}

void Engine::State::DeadLetter(uint64_t id, Held& h, const std::string& reason,
                               const std::string& code, TimePoint now) {
  core::dead_letter::Origin origin{std::string(h.msg.subject()), h.msg.stream(), h.msg.stream_seq(),
                                   std::string(h.msg.data()), h.msg.AllHeaders()};
  h.dlq_reason = reason;
  h.dlq_code = code;
  // The copy carries a Nats-Msg-Id: publishing it again (a lost answer, a retry) stores one copy.
  if (auto st = publisher->Publish(core::dead_letter::Build(origin, reason, h.last_answer), id);
      !st) {
    OnDeadLettered(id, h, st, now);
    return;
  }
  h.stage = Stage::kDeadLettering;
  h.next_at = now + kDeadLetterAckWait;
  timers.emplace(h.next_at, id);
}

void Engine::State::OnDeadLettered(uint64_t id, Held& h, const core::Status& stored,
                                   TimePoint now) {
  if (!stored) {
    spdlog::error("could not move seq {} to WEB_DLQ, will retry: {}", h.msg.stream_seq(),
                  stored.error().message);
    Backoff(id, h, now + kDeadLetterRetry);  // the timer sees dlq_reason and publishes again
    return;
  }
  // Only now, with the DLQ copy stored, may the origin go.
  (void)h.msg.Ack();
  m.dead_lettered.With({h.dlq_code}).Inc();
  spdlog::warn("event moved to the dlq: reason=\"{}\" subject={} seq={} last_answer=\"{}\"",
               h.dlq_reason, h.msg.subject(), h.msg.stream_seq(), h.last_answer);
  Finish(id, h);
}

void Engine::State::Finish(uint64_t id, Held& h) {
  finished.Add(h.msg.stream_seq());
  if (lanes.Head(h.lane) == id) {
    auto next = lanes.PopHead(h.lane);
    if (next) {
      auto n = held.find(*next);
      if (n != held.end() && n->second.stage == Stage::kWaiting) MakeReady(*next, n->second);
    }
  } else {
    lanes.Remove(h.lane, id);
  }
  held.erase(id);
  held_count.fetch_sub(1);
  room_cv.notify_one();
}

void Engine::State::Tick(TimePoint now) {
  // Keep every held message alive: JetStream would redeliver it after the ack wait.
  auto touch_every = cfg.ack_wait / 3;
  for (auto& [id, h] : held) {
    if (now - h.touched >= touch_every) {
      (void)h.msg.InProgress();
      h.touched = now;
    }
  }
  for (int i = 0; i < static_cast<int>(processes.size()); ++i) {
    auto& p = processes[i];
    if (p.health.check_running && now - p.last_check_started > milliseconds(10'000)) {
      p.health.check_running = false;  // a lost answer must not block checks for ever
    }
    if (p.health.Last() != ProcessHealth::State::kUp && !p.health.check_running &&
        now - p.last_check_started >= kDownRecheck) {
      StartCheck(i, now);
    }
  }
  if (++ticks % 60 == 0) visit_cache.Sweep();
  UpdateGauges();
}

void Engine::State::UpdateGauges() {
  m.held.Set(held_count.load());
  m.sending.Set(static_cast<double>(http.in_flight()));
  m.lanes_active.Set(static_cast<double>(lanes.lanes()));
  m.lanes_blocked.Set(static_cast<double>(lanes.blocked()));
  m.nats_connected.Set(nats.Connected() ? 1 : 0);
}

void Engine::State::ReleaseAll(bool hand_back) {
  if (!hand_back) {
    spdlog::warn(
        "the lease is lost: leaving {} held events to the next leader (they come back after the "
        "ack wait; a nak now could reach its delivery of the same message)",
        held.size());
    held.clear();
    held_count.store(0);
    return;
  }
  // Acks written on the coalescing connection go out before anything else is said.
  if (acks_nats) {
    if (auto st = acks_nats->Flush(5000); !st) {
      spdlog::warn("flushing acks: {} (their events are redelivered and skipped by the guard)",
                   st.error().message);
    }
  }
  // The intake's last pull request lives until it expires; a nak before then would hand the
  // message straight back to this (now idle) subscription.
  std::this_thread::sleep_for(milliseconds(600));
  size_t released = 0;
  for (auto& [id, h] : held) {
    // A send still unanswered may yet be stored: its event comes back only once that send
    // would have timed out, so the next process does not send it while Umami still works on it.
    (void)h.msg.Nak(h.stage == Stage::kSending ? cfg.send_timeout : core::Millis(0));
    ++released;
  }
  held.clear();
  held_count.store(0);
  if (auto st = nats.Flush(5000); !st) {
    spdlog::warn("releasing held events: {} (they return after the ack wait)", st.error().message);
  }
  if (released > 0) spdlog::info("released {} held events for redelivery", released);
}

}  // namespace replayer
