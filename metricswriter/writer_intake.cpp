// The intake thread of the Writer (writer.h): fetch, check, decode, group; dead letters.
#include <spdlog/spdlog.h>

#include "common/dead_letter.h"
#include "common/topology.h"
#include "metricswriter/intake.h"
#include "metricswriter/writer.h"

namespace mw {

void Writer::DeadLetter(core::Message& msg, const std::string& reason, const std::string& detail,
                        const std::string& label) {
  core::dead_letter::Origin origin;
  origin.subject = std::string(msg.subject());
  origin.stream = msg.stream().empty() ? core::topology::kApiMetrics : msg.stream();
  origin.stream_seq = msg.stream_seq();
  origin.payload = std::string(msg.data());
  origin.headers = msg.AllHeaders();
  auto ack = core::PublishSync(nats_, core::dead_letter::Build(origin, reason, detail));
  if (!ack.ok()) {
    // Not ours to drop: it comes back after the delay and is judged (and moved) again.
    metrics_.dlq_publish_failures.Inc();
    spdlog::warn("could not move sequence {} ({}) to the dead-letter stream, retrying later: {}",
                 origin.stream_seq, origin.subject, ack.error().message);
    (void)msg.Nak(Millis(5000));
    return;
  }
  // Acked only now that API_DLQ has it. A lost ack means a redelivery, whose DLQ publish the
  // stream deduplicates (the DLQ message id is derived from stream and sequence).
  if (auto s = msg.AckSync(); !s.ok()) {
    spdlog::warn("ack of dead-lettered sequence {} failed: {}", origin.stream_seq,
                 s.error().message);
  }
  metrics_.dead_lettered.With({label}).Inc();
  spdlog::warn("batch moved to the dead-letter stream: reason \"{}\"{}, subject {}, sequence {}",
               reason, detail.empty() ? "" : " (" + detail + ")", origin.subject,
               origin.stream_seq);
}

bool Writer::Admit(core::Message& msg, PendingBatch* out) {
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
  core::Status st = *format == Format::kJson ? json_.Decode(msg.data(), &out->batch)
                                             : proto_.Decode(msg.data(), &out->batch);
  if (!st.ok()) {
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
  return true;
}

void Writer::IntakeLoop(core::PullConsumer& consumer) {
  GroupPolicy policy(options_.group_batches, options_.group_points, options_.group_linger);
  Group g;
  Clock::time_point last_error{};
  Clock::time_point last_fetch{};
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
    bool room = true;
    {
      // Fetch only with room downstream: everything fetched is either in the group gathered
      // here (for at most the linger) or queued, where the store threads keep it alive.
      std::unique_lock lk(mu_);
      cv_.wait_for(lk, Millis(200),
                   [&] { return queue_.size() < options_.queued_groups || stop_.stopping(); });
      room = queue_.size() < options_.queued_groups;
    }
    now = Clock::now();
    // Without room, still a fetch of one message every third of the ack wait: the server may
    // have answered an earlier pull request after nats.c stopped waiting for it, and what it
    // sent waits unseen in nats.c's queue, where nothing keeps it alive. Such messages are
    // taken first, without a new request to the server.
    if (!room && now - last_fetch < options_.consumer.ack_wait / 3) continue;
    last_fetch = now;
    auto want =
        room ? static_cast<int>(std::min<size_t>(options_.group_batches - g.batches.size(), 500))
             : 1;
    auto fetched =
        consumer.Fetch(want, policy.FetchWait(g.batches.size(), g.first, now, Millis(1000)));
    if (!fetched.ok()) {
      if (Clock::now() - last_error > std::chrono::seconds(30)) {
        spdlog::warn("fetch from API_METRICS failed (retrying): {}", fetched.error().message);
        last_error = Clock::now();
      }
      stop_.WaitFor(Millis(500));
      continue;
    }
    for (auto& msg : *fetched) {
      metrics_.received.Inc();
      PendingBatch pb;
      if (!Admit(msg, &pb)) continue;
      if (g.batches.empty()) g.first = Clock::now();
      g.points += pb.batch.PointCount();
      g.messages.push_back(std::move(msg));
      g.batches.push_back(std::move(pb));
      metrics_.held_batches.Set(static_cast<double>(++held_));
    }
  }
  if (!g.batches.empty()) hand_over();  // decoded already: the store thread finishes it
  {
    std::lock_guard lk(mu_);
    intake_done_ = true;
  }
  cv_.notify_all();
}

}  // namespace mw
