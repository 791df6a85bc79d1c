#include "common/lease_keeper.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include "common/timefmt.h"
#include "common/topology.h"

namespace common {

namespace {
constexpr std::chrono::milliseconds kIdle{100};
// How long lease creates may fail without an answer before it is logged (NoteCreateFailure).
constexpr std::chrono::seconds kQuietFor{30};

metrics::Gauge& LeaderGauge(metrics::Registry& registry, const std::string& key) {
  return registry
      .AddGauge(key + "_leader", "1 while this instance holds the " + key +
                                     " lease in the KV bucket locks and may consume, else 0")
      .Get();
}

metrics::Counter& ChangesCounter(metrics::Registry& registry, const std::string& key) {
  return registry
      .AddCounter(key + "_leadership_changes_total",
                  "Times this instance gained or lost the lease (counts reset "
                  "when the process restarts)")
      .Get();
}

}  // namespace

void LeaseKeeper::RegisterMetrics(metrics::Registry& registry, const std::string& key) {
  LeaderGauge(registry, key);
  ChangesCounter(registry, key);
}

LeaseKeeper::LeaseKeeper(NatsClient& nats, std::string key, LeaseHolder self,
                         metrics::Registry& registry)
    : nats_(nats),
      key_(std::move(key)),
      self_(std::move(self)),
      leader_gauge_(LeaderGauge(registry, key_)),
      changes_(ChangesCounter(registry, key_)),
      decision_(LeaseTiming{}) {}

void LeaseKeeper::SetStatus(std::map<std::string, int64_t> status) {
  std::lock_guard lock(mu_);
  self_.status = std::move(status);
}

LeaseHolder ThisProcessHolder(const std::string& instance) {
  LeaseHolder h;
  h.instance = instance;
  char host[256] = {0};
  if (gethostname(host, sizeof(host) - 1) != 0) host[0] = 0;
  h.host = host[0] ? host : "unknown";
  h.pid = getpid();
  h.started_unix_ms = NowUnixNs() / 1'000'000;
  return h;
}

LeaseKeeper::~LeaseKeeper() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  // Only a lease still inside its own deadline is deleted: then nobody else can hold it.
  std::lock_guard lock(mu_);
  if (bucket_ && decision_.Leads(LeaseClock::now())) {
    if (auto st = bucket_->Delete(key_); st) {
      spdlog::info("released the {} lease", key_);
    } else {
      spdlog::warn("could not release the {} lease (it expires by itself): {}", key_,
                   st.error().message);
    }
  }
  decision_.Resign();
  decision_.TakeChange();
  leader_gauge_.Set(0);
}

void LeaseKeeper::Start() {
  thread_ = std::thread([this] { Loop(); });
}

LeaseKeeper::Wait LeaseKeeper::WaitForLeadership(StopFlag& stop) {
  std::unique_lock lock(mu_);
  while (!decision_.Leads(LeaseClock::now())) {
    if (stop.stopping()) return Wait::kStopped;
    if (reach_.Lost(LeaseClock::now())) return Wait::kMove;
    cv_.wait_for(lock, kIdle);
  }
  return stop.stopping() ? Wait::kStopped : Wait::kLeads;
}

std::chrono::milliseconds LeaseKeeper::JetStreamSilentFor() const {
  std::lock_guard lock(mu_);
  return reach_.SilentFor(LeaseClock::now());
}

void LeaseKeeper::BindTerm(StopFlag* term) {
  std::lock_guard lock(mu_);
  term_ = term;
  if (term_ == nullptr) return;
  if (decision_.Leads(LeaseClock::now())) {
    term_->ExtendDeadline(decision_.valid_until());
  } else {
    term_->Expire();
  }
}

bool LeaseKeeper::Leads() const {
  std::lock_guard lock(mu_);
  return decision_.Leads(LeaseClock::now());
}

void LeaseKeeper::Apply(LeaseDecision::Change change) {
  if (change == LeaseDecision::Change::kGained) {
    spdlog::info("leads: took the {} lease as {}", key_, self_.Describe());
    leader_gauge_.Set(1);
    changes_.Inc();
    cv_.notify_all();
  } else if (change == LeaseDecision::Change::kLost) {
    spdlog::warn("lost the {} lease: stopping at once, releasing what is held", key_);
    leader_gauge_.Set(0);
    changes_.Inc();
    if (term_) term_->Expire();
  }
}

void LeaseKeeper::NoteCreateFailure(const Error& e, LeaseClock::time_point now) {
  // Refused because another holder's lease is there: a follower's normal state, not logged.
  // Any other failure (no answer, no responders) means the bucket cannot be reached through
  // this connection: an instance that silently never leads looks like a healthy follower, so
  // past kQuietFor it says so, once a minute.
  if (e.kind == ErrorKind::kPermanent) {
    create_failing_since_ = {};
    return;
  }
  spdlog::debug("lease: create failed: {}", e.message);
  if (create_failing_since_ == LeaseClock::time_point{}) create_failing_since_ = now;
  auto failing = std::chrono::duration_cast<std::chrono::seconds>(now - create_failing_since_);
  int64_t left_out = 0;
  if (failing >= kQuietFor && create_warn_.Allow(now, &left_out)) {
    spdlog::warn(
        "lease {}: cannot take it: the KV bucket {} has not answered a create for {} s ({}); "
        "this instance does not consume until it does{}",
        key_, topology::kLocksBucket, failing.count(), e.message, LeftOut(left_out));
  }
}

void LeaseKeeper::Loop() {
  std::unique_lock lock(mu_);
  while (!stop_) {
    auto now = LeaseClock::now();
    if (!bucket_) {
      lock.unlock();
      auto b = KvBucket::Bind(nats_, topology::kLocksBucket);
      lock.lock();
      std::string why;
      if (!b && b.error().kind == ErrorKind::kRetryable && nats_.Connected()) {
        reach_.Unanswered(now);
      } else if (!nats_.Connected()) {
        reach_.Disconnected();
      } else {
        reach_.Answered(now);
      }
      if (b) {
        // The bucket's max age is the server's side of the lease: time ours by it, not by
        // the configuration, so the two cannot disagree.
        auto ttl = (*b)->Ttl();
        if (!ttl) {
          why = ttl.error().message;
        } else if (ttl->count() <= 0) {
          why =
              "the bucket keeps values forever (no TTL): a lease could never expire; run "
              "platformctl init";
        } else {
          decision_ = LeaseDecision(LeaseTiming::ForTtl(*ttl));
          reach_ = JetStreamReach(*ttl);
          bucket_ = std::move(*b);
          spdlog::info("lease {}: TTL {} ms (the bucket's max age)", key_, ttl->count());
          continue;
        }
      } else {
        why = b.error().message;
      }
      {
        spdlog::warn("lease: cannot use the KV bucket {} yet: {}", topology::kLocksBucket, why);
        cv_.wait_for(lock, std::chrono::seconds(2), [this] { return stop_; });
        continue;
      }
    }
    auto action = decision_.Next(now);
    Apply(decision_.TakeChange());
    if (action.op == LeaseDecision::Op::kCreate && !nats_.Connected()) {
      // Not even tried: nats.c would keep the request and send it on reconnect, after this
      // thread stopped waiting for its answer, and the server would then give the lease to
      // this instance without its knowing: nobody would consume for a whole TTL (measured:
      // 15 s after every reconnect). The time without answers restarts with the connection.
      create_failing_since_ = {};
      reach_.Disconnected();
      decision_.OnCreateRefused(now);
    } else if (action.op == LeaseDecision::Op::kCreate) {
      LeaseHolder h = self_;
      h.acquired_unix_ms = NowUnixNs() / 1'000'000;
      std::string value = h.ToJson();
      lock.unlock();
      auto r = bucket_->Create(key_, value);
      lock.lock();
      if (r || r.error().kind != ErrorKind::kRetryable) {
        reach_.Answered(now);
      } else {
        reach_.Unanswered(now);
      }
      if (r) {
        create_failing_since_ = {};
        self_ = h;  // renewals keep this acquisition time
        decision_.OnCreated(now, *r);
        if (term_) term_->ExtendDeadline(decision_.valid_until());
      } else {
        NoteCreateFailure(r.error(), LeaseClock::now());
        decision_.OnCreateRefused(LeaseClock::now());
      }
    } else if (action.op == LeaseDecision::Op::kRenew) {
      std::string value = self_.ToJson();
      lock.unlock();
      auto r = bucket_->Update(key_, value, action.revision);
      lock.lock();
      if (r || r.error().kind != ErrorKind::kRetryable) {
        reach_.Answered(now);
      } else {
        reach_.Unanswered(now);
      }
      if (r) {
        decision_.OnRenewed(now, *r);
        if (term_ && decision_.leader()) term_->ExtendDeadline(decision_.valid_until());
      } else {
        spdlog::warn("lease: renewal of {} failed: {}", key_, r.error().message);
        decision_.OnRenewFailed(LeaseClock::now());
      }
    }
    Apply(decision_.TakeChange());
    cv_.wait_for(lock, kIdle, [this] { return stop_; });
  }
}

}  // namespace common
