#include "replayer/engine.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/topology.h"
#include "replayer/engine_state.h"

namespace replayer {

ReplayerConfig ReadReplayerConfig(core::ConfigReader& r) {
  ReplayerConfig c;
  c.umami_urls = r.UrlList("UMAMI_URLS", "http://127.0.0.1:3000", {"http", "https"});
  c.workers = static_cast<int>(r.Int("REPLAYER_WORKERS", c.workers, 1, 4096));
  c.sends_per_process =
      static_cast<int>(r.Int("REPLAYER_SENDS_PER_PROCESS", c.sends_per_process, 1, 4096));
  c.max_in_flight = static_cast<int>(r.Int("REPLAYER_MAX_IN_FLIGHT", c.max_in_flight, 1, 100000));
  c.ack_wait =
      r.Duration("REPLAYER_ACK_WAIT", c.ack_wait, core::Millis(3000), core::Millis(600'000));
  c.send_timeout =
      r.Duration("REPLAYER_SEND_TIMEOUT", c.send_timeout, core::Millis(100), core::Millis(120'000));
  return c;
}

Engine::Engine(core::NatsClient& nats, ReplayerConfig config, ReplayerMetrics& metrics)
    : s_(std::make_unique<State>(nats, std::move(config), metrics)) {}

Engine::~Engine() {
  s_->intake_stop = true;
  if (s_->intake.joinable()) s_->intake.join();
  // The publisher's completions reach into the inbox and the HTTP pool: it must go (waiting for
  // its last acks) while they still exist, whatever the members' order.
  s_->publisher.reset();
}

core::Status Engine::Start() {
  auto& s = *s_;
  core::ConsumerSpec spec;
  spec.stream = core::topology::kWebEvents;
  spec.durable = "replayer";
  spec.filter_subject = std::string(core::topology::kWebEventsSubjectPrefix) + "*";
  spec.ack_wait = s.cfg.ack_wait;
  // Above the in-flight limit, so the server never stops delivering before we do.
  spec.max_ack_pending = s.cfg.max_in_flight + 100;
  auto consumer = core::PullConsumer::Bind(s.nats, spec);
  if (!consumer) return consumer.error();
  s.consumer = std::move(*consumer);
  auto stored = core::KvBucket::Bind(s.nats, core::topology::kStoredIdsBucket);
  if (!stored) return stored.error();
  s.stored_ids = std::move(*stored);
  auto visits = core::KvBucket::Bind(s.nats, core::topology::kVisitStateBucket);
  if (!visits) return visits.error();
  s.visits = std::move(*visits);
  if (!s.acks_nats) {
    core::NatsClient::Options o;
    o.client_name = "replayer acks";
    o.send_asap = false;
    o.request_timeout_ms = s.nats.request_timeout_ms();
    auto acks = s.nats.Sibling(o);
    if (!acks) return acks.error();
    s.acks_nats = std::move(*acks);
  }
  auto publisher =
      core::AsyncPublisher::Create(*s.acks_nats, [this](uint64_t tag, const core::Status& st) {
        {
          std::lock_guard lock(s_->inbox_mu);
          s_->inbox_done.push_back({tag, st});
        }
        s_->http.Wakeup();
      });
  if (!publisher) return publisher.error();
  s.publisher = std::move(*publisher);
  for (const auto& p : s.processes) s.m.process_up.With({p.url}).Set(1);
  return core::Status::Ok();
}

void Engine::Run(core::StopFlag& stop) {
  auto& s = *s_;
  // A process takes sends only once its checks passed: this also warms Umami's routes.
  for (int i = 0; i < static_cast<int>(s.processes.size()); ++i) s.StartCheck(i, Clock::now());
  s.intake = std::thread([&s] { s.IntakeLoop(); });
  TimePoint stop_deadline{};
  TimePoint last_tick{};
  while (true) {
    TimePoint now = Clock::now();
    bool stopping = stop.stopping();
    if (stopping && stop_deadline == TimePoint{}) {
      spdlog::info("stopping: no new fetches or sends; finishing {} held events",
                   s.held_count.load());
      s.intake_stop = true;
      s.intake.join();
      stop_deadline = now + kStopGrace;
    }
    s.DrainInbox(now);
    if (now - last_tick >= milliseconds(1000)) {
      s.Tick(now);
      last_tick = now;
    }
    while (!s.timers.empty() && s.timers.top().first <= now) {
      uint64_t id = s.timers.top().second;
      s.timers.pop();
      auto it = s.held.find(id);
      if (it == s.held.end()) continue;
      Held& h = it->second;
      if (h.stage == Stage::kBackoff && h.next_at <= now) {
        if (!h.dlq_reason.empty())
          s.DeadLetter(id, h, h.dlq_reason, h.dlq_code, now);
        else
          s.MakeReady(id, h);
      } else if (h.stage == Stage::kFinishing && h.next_at <= now) {
        s.PublishGuard(id, h, now);  // no ack for the guard record in time: write it again
      } else if (h.stage == Stage::kDeadLettering && h.next_at <= now) {
        s.DeadLetter(id, h, h.dlq_reason, h.dlq_code, now);  // no answer in time: again
      }
    }
    if (stopping) {
      // Nothing new starts; wait for sends, guard records and DLQ copies under way, then release
      // the rest.
      bool busy = s.http.in_flight() > 0;
      for (const auto& [id, h] : s.held) {
        busy = busy || h.stage == Stage::kFinishing || h.stage == Stage::kDeadLettering;
      }
      if (!busy || now >= stop_deadline) break;
    } else {
      s.Dispatch(now);
    }
    milliseconds wait = kTick;
    if (!s.timers.empty()) {
      auto until = std::chrono::duration_cast<milliseconds>(s.timers.top().first - now);
      wait = std::clamp(until, milliseconds(0), kTick);
    }
    for (auto& r : s.http.Poll(wait)) s.OnResponse(std::move(r), Clock::now());
  }
  s.ReleaseAll(/*hand_back=*/!stop.expired());
  s.UpdateGauges();
}

}  // namespace replayer
