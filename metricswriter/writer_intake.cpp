// The intake thread of the Writer (writer.h): fetch, check, decode, group; dead letters.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

#include "common/dead_letter.h"
#include "common/log.h"
#include "common/nats_stream.h"
#include "common/topology.h"
#include "metricswriter/intake.h"
#include "metricswriter/writer.h"

namespace mw {

void Writer::DeadLetter(common::Message& msg, const std::string& reason, const std::string& detail,
                        const std::string& label) {
  common::dead_letter::Origin origin;
  origin.subject = std::string(msg.subject());
  origin.stream = msg.stream().empty() ? common::topology::kApiMetrics : msg.stream();
  origin.stream_seq = msg.stream_seq();
  origin.payload = std::string(msg.data());
  origin.headers = msg.AllHeaders();
  auto ack = common::PublishSync(nats_, common::dead_letter::Build(origin, reason, detail));
  if (!ack.ok()) {
    DeadLetterFailed(msg, ack.error());
    return;
  }
  // Acked only now that API_DLQ has it. A lost ack means a redelivery, whose DLQ publish the
  // stream deduplicates (the DLQ message id is derived from stream and sequence).
  if (auto s = msg.AckSync(); !s.ok()) {
    spdlog::warn("ack of dead-lettered sequence {} failed: {}", origin.stream_seq,
                 s.error().message);
  }
  metrics_.dead_lettered.With({label}).Inc();
  // The subject comes from the message, and a reason or detail may quote it or its headers.
  using common::log::Escaped;
  spdlog::warn("batch moved to the dead-letter stream: reason \"{}\"{}, subject {}, sequence {}",
               Escaped(reason), detail.empty() ? "" : " (" + Escaped(detail) + ")",
               Escaped(origin.subject), origin.stream_seq);
}

void Writer::DeadLetterFailed(common::Message& msg, const common::Error& e) {
  // Not ours to drop: the batch stays in API_METRICS, unacknowledged, comes back after the
  // delay and is judged (and moved) again. A refusal for its size cannot pass before an
  // operator raises a limit, so it comes back slowly, and each failure is counted (the
  // DLQPublishFailing alert) rather than logged.
  const bool too_large = common::IsMessageTooLarge(e);
  const size_t cause = too_large ? 0 : 1;
  const char* name = too_large ? "too_large" : "unavailable";
  metrics_.DlqPublishFailures(name).Inc();
  const Millis retry = too_large ? options_.too_large_retry : options_.unavailable_retry;
  (void)msg.Nak(retry);
  uint64_t since = 0;
  {
    std::lock_guard lk(dlq_mu_);
    const auto now = Clock::now();
    if (dlq_logged_[cause] != Clock::time_point{} &&
        now - dlq_logged_[cause] < std::chrono::hours(1)) {
      ++dlq_failed_since_log_[cause];
      spdlog::debug("dead letter of sequence {} ({}) refused again ({}): {}", msg.stream_seq(),
                    common::log::Escaped(msg.subject()), name, common::log::Escaped(e.message));
      return;
    }
    dlq_logged_[cause] = now;
    since = std::exchange(dlq_failed_since_log_[cause], 0);
  }
  spdlog::warn(
      "could not move sequence {} ({}) to the dead-letter stream{}: {}; the batch stays in "
      "{} and is tried again in {} s; every failure counts in "
      "metricswriter_dlq_publish_failures_total{{cause=\"{}\"}} (this is logged at most "
      "hourly{})",
      msg.stream_seq(), common::log::Escaped(msg.subject()),
      too_large ? ", the server refuses it for its size" : "", common::log::Escaped(e.message),
      common::topology::kApiMetrics, retry.count() / 1000, name,
      since > 0 ? "; " + std::to_string(since) + " more failures since the last line" : "");
}

bool Writer::Admit(common::Message& msg, PendingBatch* out) {
  auto tenant = TenantFromSubject(msg.subject());
  if (!tenant.ok()) {
    DeadLetter(msg, "invalid subject", tenant.error().message, "invalid_subject");
    return false;
  }
  auto id = BatchIdFromMsgId(msg.Header("Nats-Msg-Id"));
  if (!id.ok()) {
    DeadLetter(msg, "invalid message id", id.error().message, "invalid_id");
    return false;
  }
  auto format = FormatOf(msg.Header("Content-Type"), msg.data());
  if (!format.ok()) {
    DeadLetter(msg, "batch cannot be decoded: " + format.error().message, "", "content_type");
    return false;
  }
  // A redelivery is decoded under the crash-loop guard (common/crash_guard.h): a batch an
  // earlier leader died on while decoding it is not decoded again.
  const auto guard = crash_guard_->Before(msg.stream_seq(), msg.num_delivered());
  if (guard.dead_letter) {
    DeadLetter(msg, common::crash_guard::kReason, guard.detail, "crash_loop");
    return false;
  }
  common::Status st = *format == Format::kJson ? json_.Decode(msg.data(), &out->batch)
                                               : proto_.Decode(msg.data(), &out->batch);
  if (!st.ok()) {
    crash_guard_->Done(guard);
    DeadLetter(msg, "batch cannot be decoded: " + st.error().message, "", "decode");
    return false;
  }
  out->tenant = std::move(*tenant);
  out->batch_id = std::move(*id);
  out->stream_seq = msg.stream_seq();
  out->fingerprints.resize(out->batch.series.size());
  for (size_t i = 0; i < out->batch.series.size(); ++i) {
    out->fingerprints[i] = SeriesFingerprint(out->tenant, out->batch, i, &scratch_);
  }
  crash_guard_->Done(guard);  // read through: what the store does with it is its outcome
  return true;
}

namespace {

// A message as charged before it is decoded: its payload, plus room for its headers and
// nats.c's bookkeeping.
int64_t RawCharge(const common::Message& msg) {
  return static_cast<int64_t>(msg.data().size()) + 256;
}

int64_t DecodedCharge(const PendingBatch& pb) {
  return static_cast<int64_t>(pb.batch.MemoryBytes() +
                              pb.fingerprints.capacity() * sizeof(Fingerprint) +
                              pb.tenant.capacity() + pb.batch_id.capacity());
}

}  // namespace

void Writer::Take(common::Message msg, Group* g) {
  const int64_t raw = RawCharge(msg);
  PendingBatch pb;
  if (!Admit(msg, &pb)) {
    Release(1, raw);  // dead-lettered or handed back
    return;
  }
  const int64_t decoded = DecodedCharge(pb);
  budget_.Decoded(raw, decoded);
  pb.charge = raw + decoded;
  metrics_.held_bytes.Set(static_cast<double>(held_bytes_ += decoded));
  if (g->batches.empty()) g->first = Clock::now();
  g->points += pb.batch.PointCount();
  g->messages.push_back(std::move(msg));
  g->batches.push_back(std::move(pb));
}

bool Writer::Waiting(const Group& g) const {
  // Under mu_: the store threads release under it too (Release), so no wake-up is lost.
  if (stop_.stopping()) return false;
  if (!raw_.empty()) return !budget_.MayDecode(held_bytes_, RawCharge(raw_.front()));
  if (!g.batches.empty() &&
      (g.batches.size() >= options_.group_batches || g.points >= options_.group_points)) {
    return false;  // full: hand it over
  }
  return queue_.size() >= options_.queued_groups || !budget_.NextFetch(held_bytes_).fetch;
}

void Writer::KeepRawAlive(Clock::time_point* last) {
  if (Clock::now() - *last < options_.consumer.ack_wait / 3) return;
  *last = Clock::now();
  for (auto& m : raw_) (void)m.InProgress();
}

void Writer::HandBackRaw() {
  if (raw_.empty()) return;
  int64_t bytes = 0;
  const size_t n = raw_.size();
  for (auto& m : raw_) {
    bytes += RawCharge(m);
    (void)m.Nak(Millis(0));
  }
  raw_.clear();
  Release(n, bytes);
  spdlog::info("stopping: {} fetched batches not decoded yet handed back", n);
}

void Writer::IntakeLoop(common::PullConsumer& consumer) {
  GroupPolicy policy(options_.group_batches, options_.group_points, options_.group_linger);
  Group g;
  Clock::time_point last_error{};
  Clock::time_point last_fetch{};
  Clock::time_point last_keepalive = Clock::now();
  auto hand_over = [&] {
    g.done.assign(g.messages.size(), false);
    {
      std::lock_guard lk(mu_);
      queue_.push_back(std::move(g));
    }
    cv_.notify_all();
    g = Group{};
  };
  while (!stop_.stopping()) {
    // A due group is handed over even when the queue is full, so this thread never sits on
    // fetched batches that nobody keeps alive.
    auto now = Clock::now();
    if (policy.Due(g.batches.size(), g.points, g.first, now)) {
      hand_over();
      continue;
    }
    // What was fetched is decoded as far as the budget has room for it.
    if (!raw_.empty() && !policy.Full(g.batches.size(), g.points) &&
        budget_.MayDecode(held_bytes_, RawCharge(raw_.front()))) {
      common::Message m = std::move(raw_.front());
      raw_.pop_front();
      Take(std::move(m), &g);
      continue;
    }
    {
      // Fetch only with room downstream and in the budget: everything fetched is either
      // waiting here (kept alive by this thread), in the group gathered here (for at most the
      // linger) or queued, where the store threads keep it alive.
      std::unique_lock lk(mu_);
      auto wait = Millis(200);
      if (!g.batches.empty()) {
        wait = std::clamp(
            std::chrono::duration_cast<Millis>(g.first + options_.group_linger - Clock::now()),
            Millis(1), wait);
      }
      cv_.wait_for(lk, wait, [&] { return !Waiting(g); });
    }
    KeepRawAlive(&last_keepalive);
    now = Clock::now();
    const bool room = [&] {
      std::lock_guard lk(mu_);
      return queue_.size() < options_.queued_groups;
    }();
    const ByteBudget::Fetch plan = budget_.NextFetch(held_bytes_);
    const bool fetch = room && plan.fetch && raw_.empty();
    // Without room, still a fetch every third of the ack wait, of one message nats.c already
    // holds (a byte limit of 1 asks the server for nothing that could be delivered): the
    // server may have answered an earlier pull request after nats.c stopped waiting for it,
    // and what it sent waits unseen in nats.c's queue, where nothing keeps it alive.
    if (!fetch && now - last_fetch < options_.consumer.ack_wait / 3) continue;
    last_fetch = now;
    int want = 1;
    int64_t max_bytes = 1;
    if (fetch && !plan.alone) {
      // What the group has room for (never full here: a full group is due), but at least 16:
      // more wait here for the next group. A tiny request is where nats.c 3.4's fetch overflow
      // (see PullConsumer::TakeHeld) could still strike, with late answers racing the request.
      want =
          static_cast<int>(std::clamp<size_t>(options_.group_batches - g.batches.size(), 16, 500));
      max_bytes = plan.max_bytes;
    } else if (fetch) {
      max_bytes = 0;  // alone: one message, whatever its size
    }
    const Millis fetch_wait =
        fetch ? policy.FetchWait(g.batches.size(), g.first, now, Millis(1000)) : kMinFetchWait;
    auto fetched = consumer.Fetch(want, max_bytes, fetch_wait);
    if (!fetched.ok()) {
      if (Clock::now() - last_error > std::chrono::seconds(30)) {
        spdlog::warn("fetch from API_METRICS failed (retrying): {}", fetched.error().message);
        last_error = Clock::now();
      }
      stop_.WaitFor(Millis(500));
      continue;
    }
    if (fetched->next_exceeds_max_bytes) {
      if (fetch) {
        spdlog::debug(
            "the next batch is bigger than the {} bytes there is room for: it is "
            "fetched alone once nothing else is held",
            max_bytes);
        budget_.NextTooLarge();
      }
      continue;
    }
    if (fetch && (plan.alone || !fetched->messages.empty())) budget_.Fetched();
    for (auto& msg : fetched->messages) {
      metrics_.received.Inc();
      metrics_.held_batches.Set(static_cast<double>(++held_));
      metrics_.held_bytes.Set(static_cast<double>(held_bytes_ += RawCharge(msg)));
      raw_.push_back(std::move(msg));
    }
  }
  HandBackRaw();
  if (!g.batches.empty()) hand_over();  // decoded already: the store thread finishes it
  {
    std::lock_guard lk(mu_);
    intake_done_ = true;
  }
  cv_.notify_all();
}

}  // namespace mw
