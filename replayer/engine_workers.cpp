// The replayer's shell: the fetch thread and the lookup thread. Each carries out the requests the
// engine thread hands it and puts the answers in the inbox; neither decides anything.
#include "replayer/engine_workers.h"

#include <pthread.h>

#include "common/dead_letter.h"

namespace replayer {
namespace {
constexpr common::Millis kFetchWait{500};
}  // namespace

void Inbox::Put(Fetched f) {
  std::lock_guard lock(mu_);
  pending_.fetched.push_back(std::move(f));
}

void Inbox::Put(std::vector<GuardAnswer> guards, std::vector<VisitAnswer> visits) {
  std::lock_guard lock(mu_);
  for (auto& g : guards) pending_.guards.push_back(g);
  for (auto& v : visits) pending_.visits.push_back(std::move(v));
}

void Inbox::Put(PubDone done) {
  std::lock_guard lock(mu_);
  pending_.published.push_back(std::move(done));
}

void Inbox::Take(Batch& out) {
  out.clear();  // keeps its vectors' capacity: the two batches trade places on every take
  std::lock_guard lock(mu_);
  std::swap(out, pending_);
}

Workers::Workers(common::PullConsumer& consumer, common::KvBucket& stored_ids,
                 common::KvBucket& visits, common::CrashGuard& crash_guard, Inbox& inbox,
                 std::function<void()> wake)
    : consumer_(consumer),
      stored_ids_(stored_ids),
      visits_(visits),
      crash_guard_(crash_guard),
      inbox_(inbox),
      wake_(std::move(wake)) {
  fetcher_ = std::thread([this] { FetchLoop(); });
  looker_ = std::thread([this] { LookupLoop(); });
  // Named for `top -H` and perf: an operator can tell which one is busy.
  pthread_setname_np(fetcher_.native_handle(), "fetch");
  pthread_setname_np(looker_.native_handle(), "lookup");
}

Workers::~Workers() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  fetch_cv_.notify_all();
  lookup_cv_.notify_all();
  fetcher_.join();
  looker_.join();
}

void Workers::Fetch(FetchCmd cmd) {
  {
    std::lock_guard lock(mu_);
    fetch_ = cmd;
  }
  fetch_cv_.notify_one();
}

void Workers::LookUp(LookupJob job) {
  {
    std::lock_guard lock(mu_);
    lookups_.push_back(std::move(job));
  }
  lookup_cv_.notify_one();
}

void Workers::FetchLoop() {
  while (true) {
    FetchCmd req;
    {
      std::unique_lock lock(mu_);
      fetch_cv_.wait(lock, [&] { return stop_ || fetch_.has_value(); });
      if (stop_) return;
      req = *fetch_;
      fetch_.reset();
    }
    Fetched f;
    // The core's byte limit goes to the server with the request, so a fetch never brings more
    // than the budget has room for: the core asks for half its room (less the records of the
    // messages it may bring), as a message is charged its bytes (the server counts subject,
    // reply and headers too), its parse (at most as big again) and kHeldMessageBytes.
    auto batch = consumer_.Fetch(req.max_messages, req.max_bytes, kFetchWait);
    if (batch && batch->messages.empty() && batch->next_exceeds_max_bytes) {
      // The next message is bigger than the room the core asked with (at least
      // max_message_bytes, 1 MiB; the server allows bigger ones): it is taken alone, the one
      // message the budget may go over by, or it would wait for room that never comes.
      batch = consumer_.Fetch(1, 0, kFetchWait);
    }
    if (!batch) {
      f.error = batch.error().message;  // answered at once; the core waits before the next
    } else {
      f.messages = std::move(batch->messages);
      f.deliveries.reserve(f.messages.size());
      // A redelivery is parsed under the crash-loop guard (common/crash_guard.h): the batch's
      // markers are read in one round trip, and each marker's removal goes out with the next
      // one's write (no two markers of this process are there while a message is parsed).
      std::vector<std::pair<uint64_t, uint64_t>> guarded;
      guarded.reserve(f.messages.size());
      for (const auto& msg : f.messages)
        guarded.emplace_back(msg.stream_seq(), msg.num_delivered());
      crash_guard_.Prefetch(guarded);
      for (const auto& msg : f.messages) {
        Delivery d;
        d.ref = ++next_ref_;
        d.stream_seq = msg.stream_seq();
        d.num_delivered = msg.num_delivered();
        const auto wire = static_cast<int64_t>(msg.data().size() + msg.HeaderBytes());
        d.replayed = msg.HeaderView(common::dead_letter::kReplay).has_value();
        d.subject = std::string(msg.subject());
        // Parsing is pure and the costliest step of the intake: done here, beside the engine.
        const auto guard = crash_guard_.Before(d.stream_seq, d.num_delivered);
        if (guard.dead_letter) {
          d.parsed.poison_reason = common::crash_guard::kReason;
          d.crash_loop_detail = guard.detail;
        } else {
          d.parsed = Parse(msg.data(), msg.HeaderView("Nats-Msg-Id").value_or(""));
          crash_guard_.Done(guard, /*defer=*/true);
        }
        // Charged as received and as parsed (a second copy of the payload: 46 KB events held
        // 2.1 times their bytes, bench/service_memory), and the records of a held message.
        d.bytes = wire + ParsedBytes(d.parsed) + kHeldMessageBytes;
        f.deliveries.push_back(std::move(d));
      }
      crash_guard_.Flush();
    }
    inbox_.Put(std::move(f));
    wake_();
  }
}

void Workers::LookupLoop() {
  while (true) {
    LookupJob job;
    {
      std::unique_lock lock(mu_);
      lookup_cv_.wait(lock, [&] { return stop_ || !lookups_.empty(); });
      if (stop_) return;
      // Everything queued goes out together: the KV reads are request/reply round trips.
      while (!lookups_.empty()) {
        auto& more = lookups_.front();
        for (auto& g : more.guards) job.guards.push_back(std::move(g));
        for (auto& v : more.visits) job.visits.push_back(std::move(v));
        lookups_.pop_front();
      }
    }
    auto answer = [](const common::Result<std::optional<common::KvValue>>& r) {
      if (!r) return Lookup::kError;
      return r->has_value() ? Lookup::kFound : Lookup::kAbsent;
    };
    std::vector<GuardAnswer> guards;
    std::vector<VisitAnswer> visits;
    if (!job.guards.empty()) {
      std::vector<std::string> keys;
      for (const auto& g : job.guards) keys.push_back(g.key);
      auto got = stored_ids_.GetMany(keys);
      for (size_t i = 0; i < got.size(); ++i) {
        guards.push_back({job.guards[i].lookup_id, answer(got[i])});
      }
    }
    if (!job.visits.empty()) {
      std::vector<std::string> keys;
      for (const auto& v : job.visits) keys.push_back(v.key);
      auto got = visits_.GetMany(keys);
      for (size_t i = 0; i < got.size(); ++i) {
        auto a = answer(got[i]);
        visits.push_back({job.visits[i].lane, a, a == Lookup::kFound ? (*got[i])->value : ""});
      }
    }
    inbox_.Put(std::move(guards), std::move(visits));
    wake_();
  }
}

}  // namespace replayer
