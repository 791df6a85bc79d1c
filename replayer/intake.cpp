// The intake thread: fetch, reject poison at once, skip what was already stored, look up the
// visitor's state, and hand the rest to the engine thread.
#include <spdlog/spdlog.h>

#include "common/dead_letter.h"
#include "common/topology.h"
#include "replayer/engine_state.h"

namespace replayer {

namespace {
constexpr core::Millis kFetchWait{500};
constexpr core::Millis kRetryLater{5000};
}  // namespace

void Engine::State::IntakeLoop() {
  TimePoint last_error_log{};
  while (!intake_stop.load()) {
    int room = cfg.max_in_flight - held_count.load();
    if (room <= 0) {
      std::this_thread::sleep_for(milliseconds(10));
      continue;
    }
    auto batch = consumer->Fetch(std::min(room, cfg.fetch_batch), kFetchWait);
    if (!batch) {
      auto now = Clock::now();
      if (now - last_error_log > milliseconds(10'000)) {
        spdlog::warn("fetch from WEB_EVENTS failed (retrying): {}", batch.error().message);
        last_error_log = now;
      }
      std::this_thread::sleep_for(milliseconds(250));
      continue;
    }
    for (auto& msg : *batch) Intake(std::move(msg));
  }
}

void Engine::State::DeadLetterNow(core::Message& msg, const std::string& reason,
                                  const std::string& code) {
  core::dead_letter::Origin origin{std::string(msg.subject()), msg.stream(), msg.stream_seq(),
                                   std::string(msg.data()), msg.AllHeaders()};
  auto ack = core::PublishSync(nats, core::dead_letter::Build(origin, reason));
  if (!ack) {
    spdlog::error("could not move seq {} to WEB_DLQ, will retry: {}", msg.stream_seq(),
                  ack.error().message);
    (void)msg.Nak(kRetryLater);
    return;
  }
  // Only now, with the DLQ copy stored, may the origin go.
  if (auto st = msg.Ack(); !st) {
    spdlog::warn("ack of dead-lettered seq {} failed: {}", msg.stream_seq(), st.error().message);
  }
  m.dead_lettered.With({code}).Inc();
  spdlog::warn("event moved to the dlq: reason=\"{}\" subject={} seq={}", reason, msg.subject(),
               msg.stream_seq());
}

void Engine::State::Intake(core::Message msg) {
  m.fetched.Inc();
  if (msg.num_delivered() > 1) m.redeliveries_received.Inc();
  auto parsed = Parse(msg.data(), msg.Header("Nats-Msg-Id").value_or(""));
  if (!parsed.event) {
    DeadLetterNow(msg, parsed.poison_reason, kReasonPoison);
    return;
  }
  WebEvent& ev = *parsed.event;
  // A first delivery of an original message cannot have been sent before; a redelivery or a
  // replay may have been. Only those pay for the guard's read.
  if (msg.num_delivered() > 1 || msg.Header(core::dead_letter::kReplay)) {
    auto seen = stored_ids->Get(KvSafe(ev.id));
    if (!seen) {
      spdlog::warn("duplicate guard unreadable for seq {}, retrying later: {}", msg.stream_seq(),
                   seen.error().message);
      (void)msg.Nak(kRetryLater);
      return;
    }
    if (seen->has_value()) {
      (void)msg.Ack();
      m.duplicates_skipped.Inc();
      spdlog::debug("event {} (seq {}) was stored before: acked, not sent again", ev.id,
                    msg.stream_seq());
      return;
    }
  }
  std::string lane = ev.LaneKey();
  if (!visit_cache.Lookup(lane)) {
    auto state = visits->Get(VisitKey(ev.website, ev.visitor));
    if (state) visit_cache.Set(lane, state->has_value() ? (*state)->value : "");
    // Unreadable: send without a token now; Umami then derives the visit itself.
  }
  held_count.fetch_add(1);
  {
    std::lock_guard lock(inbox_mu);
    inbox_events.push_back({std::move(msg), std::move(ev)});
  }
  http.Wakeup();
}

}  // namespace replayer
