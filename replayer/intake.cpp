// The intake thread: fetch, reject poison at once, skip what was already stored, look up the
// visitor's state, and hand the rest to the engine thread.
#include <spdlog/spdlog.h>

#include <unordered_set>

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
    // Fetch in whole batches when the limit allows, so a full engine is not fed one by one.
    int low_water = std::min(cfg.fetch_batch, std::max(1, cfg.max_in_flight / 4));
    int room = cfg.max_in_flight - held_count.load();
    if (room < low_water) {
      std::unique_lock lock(inbox_mu);
      room_cv.wait_for(lock, milliseconds(50), [&] {
        return intake_stop.load() || cfg.max_in_flight - held_count.load() >= low_water;
      });
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
    if (!batch->empty()) IntakeBatch(std::move(*batch));
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

void Engine::State::IntakeBatch(std::vector<core::Message> batch) {
  struct Item {
    core::Message msg;
    WebEvent ev;
    bool check_guard = false;
    bool check_visit = false;
    core::Result<std::optional<core::KvValue>> guard = std::optional<core::KvValue>();
    core::Result<std::optional<core::KvValue>> visit = std::optional<core::KvValue>();
  };
  std::vector<Item> items;
  items.reserve(batch.size());
  std::unordered_set<std::string> lanes_looked_up;
  for (auto& msg : batch) {
    m.fetched.Inc();
    if (msg.num_delivered() > 1) m.redeliveries_received.Inc();
    auto parsed = Parse(msg.data(), msg.Header("Nats-Msg-Id").value_or(""));
    if (!parsed.event) {
      DeadLetterNow(msg, parsed.poison_reason, kReasonPoison);
      continue;
    }
    Item it{std::move(msg), std::move(*parsed.event)};
    // A first delivery of an original message cannot have been sent before; a redelivery or a
    // replay may have been. Only those pay for the guard's read.
    it.check_guard = it.msg.num_delivered() > 1 || it.msg.Header(core::dead_letter::kReplay);
    std::string lane = it.ev.LaneKey();
    it.check_visit = !visit_cache.Lookup(lane) && lanes_looked_up.insert(lane).second;
    items.push_back(std::move(it));
  }
  // The KV reads are request/reply round trips: all of a batch's go out together.
  std::vector<size_t> guard_of, visit_of;
  std::vector<std::string> guard_keys, visit_keys;
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].check_guard) {
      guard_of.push_back(i);
      guard_keys.push_back(KvSafe(items[i].ev.id));
    }
    if (items[i].check_visit) {
      visit_of.push_back(i);
      visit_keys.push_back(VisitKey(items[i].ev.website, items[i].ev.visitor));
    }
  }
  if (!guard_keys.empty()) {
    auto got = stored_ids->GetMany(guard_keys);
    for (size_t k = 0; k < got.size(); ++k) items[guard_of[k]].guard = std::move(got[k]);
  }
  if (!visit_keys.empty()) {
    auto got = visits->GetMany(visit_keys);
    for (size_t k = 0; k < got.size(); ++k) items[visit_of[k]].visit = std::move(got[k]);
  }
  std::vector<NewEvent> admitted;
  for (auto& it : items) {
    if (it.check_guard) {
      if (!it.guard) {
        spdlog::warn("duplicate guard unreadable for seq {}, retrying later: {}",
                     it.msg.stream_seq(), it.guard.error().message);
        (void)it.msg.Nak(kRetryLater);
        continue;
      }
      if (it.guard->has_value()) {
        (void)it.msg.Ack();
        m.duplicates_skipped.Inc();
        spdlog::debug("event {} (seq {}) was stored before: acked, not sent again", it.ev.id,
                      it.msg.stream_seq());
        continue;
      }
    }
    // An unreadable visit state: send without a token; Umami then derives the visit itself.
    if (it.check_visit && it.visit) {
      visit_cache.Set(it.ev.LaneKey(), it.visit->has_value() ? (*it.visit)->value : "");
    }
    admitted.push_back({std::move(it.msg), std::move(it.ev)});
  }
  if (admitted.empty()) return;
  held_count.fetch_add(static_cast<int>(admitted.size()));
  {
    std::lock_guard lock(inbox_mu);
    for (auto& e : admitted) inbox_events.push_back(std::move(e));
  }
  http.Wakeup();
}

}  // namespace replayer
