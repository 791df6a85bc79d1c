// `platformctl dlq replay`: the run loop (see dlq/run.h). Messages are published a batch at a
// time (one round trip for the acks of the batch), and each DLQ copy is erased only after its
// own publish was acknowledged; a stop request is looked at between batches only.
#include <algorithm>
#include <functional>
#include <limits>
#include <thread>
#include <vector>

#include "platformctl/dlq/run.h"
#include "platformctl/dlq/subject.h"
#include "platformctl/nats_admin.h"

namespace platformctl::dlq {
namespace {

using common::ErrorKind;
using platformctl::nats_dlq::StoredMessage;
using Clock = std::chrono::steady_clock;

// The origin stream as the server has it now; nullopt when it does not exist.
common::Result<std::optional<OriginStream>> ReadOrigin(common::NatsClient& client,
                                                       const QueueInfo& q) {
  auto settings = platformctl::nats_admin::ReadSettings(client, q.origin_stream);
  if (!settings) return settings.error();
  if (!*settings) return std::optional<OriginStream>();
  return std::optional<OriginStream>(OriginStream{q.origin_stream, (*settings)->subjects});
}

class PublishBatch {
 public:
  PublishBatch(RunEnv& env, const QueueInfo& q, platformctl::nats_dlq::BatchPublisher& publisher,
               RunSummary& summary)
      : env_(env), q_(q), publisher_(publisher), summary_(summary) {}

  size_t size() const { return seqs_.size(); }
  // Called after a batch's publish was acknowledged, before its DLQ copies are erased: its first
  // sequence, and how many the origin stream stored new and had already.
  void OnPublished(std::function<void(uint64_t, uint64_t, uint64_t)> f) {
    before_erase_ = std::move(f);
  }
  void Add(uint64_t seq, common::OutMessage out) {
    seqs_.push_back(seq);
    outs_.push_back(std::move(out));
  }

  // Publishes what was gathered, then erases the DLQ copy of every message the origin stream
  // acknowledged (stored now, or already from an earlier run). False when NATS stopped
  // answering: the summary says so and the run must end.
  bool Flush() {
    if (seqs_.empty()) return true;
    const common::Millis timeout(env_.client.request_timeout_ms());
    auto acks = PublishRetrying(timeout);
    std::vector<uint64_t> stored;
    std::vector<bool> duplicate;
    bool keep_going = true;
    auto stop = [&](const common::Error& e) {
      if (e.kind == ErrorKind::kRetryable && keep_going) {
        summary_.MarkStopped(e.message);
        keep_going = false;
      }
    };
    for (size_t i = 0; i < seqs_.size(); ++i) {
      if (!acks[i]) {
        summary_.Add(seqs_[i], Outcome::kFailed, "kept: " + acks[i].error().message);
        stop(acks[i].error());
        continue;
      }
      stored.push_back(seqs_[i]);
      // A duplicate after our own unanswered try is that try's: replayed now, not earlier.
      duplicate.push_back(acks[i]->duplicate && !retried_[i]);
    }
    if (before_erase_ && !stored.empty()) {
      uint64_t dups = static_cast<uint64_t>(std::count(duplicate.begin(), duplicate.end(), true));
      before_erase_(seqs_.front(), stored.size() - dups, dups);
    }
    auto erased = platformctl::nats_dlq::EraseAll(env_.client, q_.dlq_stream, stored, timeout);
    for (size_t i = 0; i < stored.size(); ++i) {
      if (erased[i] || erased[i].error().kind == ErrorKind::kNotFound) {
        summary_.Add(stored[i], duplicate[i] ? Outcome::kAlreadyThere : Outcome::kReplayed);
        continue;
      }
      summary_.Add(stored[i], Outcome::kFailed,
                   "stored on " + q_.origin_stream +
                       " but its DLQ copy could not be erased (run again: it will be reported "
                       "as already there and erased): " +
                       erased[i].error().message);
      stop(erased[i].error());
    }
    seqs_.clear();
    outs_.clear();
    return keep_going;
  }

 private:
  // Publishes the batch; a message without an acknowledgement, or refused while the stream
  // elects a leader, is published again (same message id: the stream stores it once) within
  // the cluster patience.
  std::vector<common::Result<common::PubAck>> PublishRetrying(common::Millis timeout) {
    std::vector<common::Result<common::PubAck>> acks = publisher_.PublishAll(outs_, timeout);
    retried_.assign(outs_.size(), false);
    platformctl::nats_admin::Patience patience;
    while (true) {
      std::vector<size_t> again;
      for (size_t i = 0; i < acks.size(); ++i) {
        if (!acks[i] && acks[i].error().kind == ErrorKind::kRetryable) again.push_back(i);
      }
      if (again.empty() || env_.stop.stopping()) break;
      auto delay = patience.NextDelay();
      if (!delay) break;
      std::this_thread::sleep_for(*delay);
      std::vector<common::OutMessage> batch;
      for (size_t i : again) batch.push_back(outs_[i]);
      auto more = publisher_.PublishAll(batch, timeout);
      bool progress = false;
      for (size_t k = 0; k < again.size(); ++k) {
        retried_[again[k]] = true;
        if (more[k]) progress = true;
        acks[again[k]] = std::move(more[k]);
      }
      if (progress) patience.Progress();
    }
    return acks;
  }

  std::vector<bool> retried_;
  std::function<void(uint64_t, uint64_t, uint64_t)> before_erase_;
  RunEnv& env_;
  const QueueInfo& q_;
  platformctl::nats_dlq::BatchPublisher& publisher_;
  RunSummary& summary_;
  std::vector<uint64_t> seqs_;
  std::vector<common::OutMessage> outs_;
};

}  // namespace

common::Status CheckToSubject(common::NatsClient& client, const QueueInfo& q,
                              const std::string& to) {
  if (to.empty()) return common::Status::Ok();
  auto origin = ReadOrigin(client, q);
  if (!origin) return origin.error();
  if (auto refusal = ToSubjectRefusal(to, q.origin_stream, *origin)) {
    return common::Error::Invalid(*refusal);
  }
  return common::Status::Ok();
}

int RunReplay(RunEnv& env, const QueueInfo& q, const Selection& sel, const ReplayOptions& o) {
  const bool json = o.json;
  auto origin = ReadOrigin(env.client, q);
  if (!origin) return Fail(env, origin.error());
  if (!o.to_subject.empty()) {
    if (auto refusal = ToSubjectRefusal(o.to_subject, q.origin_stream, *origin)) {
      env.err << "platformctl: " << *refusal << "\n";
      return 2;
    }
  }
  auto publisher = platformctl::nats_dlq::BatchPublisher::Create(env.client);
  if (!publisher) return Fail(env, publisher.error());
  const bool resumed = o.start_seq > 1;
  auto walk =
      OpenWalk(env.client, q, sel.FilterSubject(q),
               resumed ? std::max(o.start_seq, sel.StartSeq()) : sel.StartSeq(),
               resumed ? 0 : sel.StartTimeNs(),
               o.end_seq > 0 ? o.end_seq : sel.EndSeq(std::numeric_limits<uint64_t>::max()), false);
  if (!walk) return Fail(env, walk.error());
  if (o.started) o.started(walk->end_seq);
  if (!json) {
    env.out << "replay " << q.dlq_stream << " (" << sel.Describe() << ") to "
            << (o.to_subject.empty() ? q.origin_stream : QuotedSubject(o.to_subject))
            << (resumed ? ", from seq " + std::to_string(o.start_seq) : std::string())
            << ", up to seq " << walk->end_seq
            << (o.end_seq > 0 ? ", the task's end" : ", the last when the run started") << "\n";
  }

  RunSummary summary;
  summary.CountAbove(o.count_above);
  PublishBatch batch(env, q, **publisher, summary);
  Pacer pacer(o.rate);
  // Every message below next_seq is finished; it moves when nothing gathered waits unpublished.
  uint64_t next_seq = o.start_seq > 0 ? o.start_seq : 1;
  auto last_flush = Clock::now();
  constexpr auto kPacedFlush = std::chrono::milliseconds(250);
  uint64_t last_seen = 0;
  if (o.published) {
    batch.OnPublished([&](uint64_t first, uint64_t stored, uint64_t dups) {
      o.published(first, last_seen, summary, stored, dups);
    });
  }
  auto tell = [&]() {
    if (batch.size() == 0 && last_seen > 0) next_seq = std::max(next_seq, last_seen + 1);
    if (!o.progress) return true;
    std::string why;
    if (o.progress(next_seq, summary, batch.size() == 0, why)) return true;
    summary.MarkStopped(why.empty() ? "stopped by its task record" : why);
    return false;
  };
  Progress progress(env.err, env.progress);
  const auto start = Clock::now();
  uint64_t looked_at = 0;
  auto show = [&] {
    progress.Show(ProgressLine(summary, RunKind::kReplay, q, looked_at,
                               walk->browser->initial_pending(), SecondsSince(start)));
  };
  // Messages gathered but not yet published are simply left in the DLQ by a stop.
  const bool whole = ForEachInWalk(env, *walk, summary, looked_at, [&](StoredMessage& m) {
    if (!sel.Matches(EntryOf(q, m))) {
      last_seen = m.seq;
      return tell();
    }
    if (auto wait = pacer.Next(Clock::now() - start); wait.count() > 0) {
      // Paced: what is gathered is published at least every kPacedFlush (a stop leaves what
      // was gathered and not published in the DLQ, untouched).
      auto due = Clock::now() + wait;
      if (Clock::now() - last_flush >= kPacedFlush) {
        if (!batch.Flush()) return false;
        last_flush = Clock::now();
        show();
        if (!tell()) return false;
      }
      // In slices of a second at most, so a slow pace (--rate 0.01/s) still lets a task's
      // heartbeat and a cancel through.
      while (true) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(due - Clock::now());
        if (left.count() <= 0) break;
        if (env.stop.WaitFor(std::min(left, std::chrono::milliseconds(1000)))) {
          summary.MarkStopped(kInterrupted);
          return false;
        }
        if (!tell()) return false;
      }
    }
    ReplayPlan plan = PlanReplay(q, m.seq, m.headers, std::move(m.data), *origin);
    last_seen = m.seq;
    if (!plan.publish) {
      summary.Add(m.seq, Outcome::kSkipped, plan.skip_why);
      return tell();
    }
    if (!o.to_subject.empty()) plan.out.subject = o.to_subject;
    batch.Add(m.seq, std::move(plan.out));
    if (batch.size() >= kBatch) {
      if (!batch.Flush()) return false;
      show();
    }
    return tell();
  });
  bool flushed = !whole || batch.Flush();
  if (whole && flushed) {
    last_seen = walk->end_seq;  // the walk ended: every sequence up to its end is looked at
    tell();
  }
  if (o.finished) o.finished(summary, whole && flushed, next_seq);
  progress.Clear();
  if (json)
    PrintSummaryJson(summary, RunKind::kReplay, q, sel.Describe(), walk->end_seq, env.out);
  else
    PrintSummaryText(summary, RunKind::kReplay, q, env.out, true,
                     o.progress ? "" : "run the same command again to continue");
  return summary.complete() ? 0 : 1;
}

}  // namespace platformctl::dlq
