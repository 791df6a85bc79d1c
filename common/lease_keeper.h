// Keeps this instance's leadership lease in the KV bucket `locks` (decisions in lease.h).
//
// One background thread takes, renews and (on destruction) gives up the lease. A service runs
// one leadership term at a time: WaitForLeadership(), then a StopFlag bound with BindTerm()
// for the term's work; the flag's deadline follows the lease's validity and is brought to now
// the moment the lease is lost (StopFlag::expired() then tells a lost lease from SIGTERM), so
// the work stops even if this thread is stuck.
// Ownership: borrows the NatsClient and the Registry (both outlive the keeper); owns its thread
// and KV handle. Thread-safety: every public method may be called from any thread.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/js_reach.h"
#include "common/lease.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/nats_client.h"
#include "common/nats_kv.h"
#include "common/stop_signal.h"

namespace common {

// This process as a lease holder (host name, pid, start time = now).
LeaseHolder ThisProcessHolder(const std::string& instance);

class LeaseKeeper {
 public:
  // `key`: the service's name in `locks`; metrics are `<key>_leader` and
  // `<key>_leadership_changes_total`.
  // The lease's timing comes from the bucket's TTL, read when the keeper binds it.
  LeaseKeeper(NatsClient& nats, std::string key, LeaseHolder self, metrics::Registry& registry);
  // Registers the two metrics (at 0) before there is a keeper: a service calls it at start, so
  // `<key>_leader` reads 0 while NATS cannot be reached yet, not nothing. The keeper takes the
  // same ones.
  static void RegisterMetrics(metrics::Registry& registry, const std::string& key);
  ~LeaseKeeper();  // stops the thread; a valid lease is deleted so a follower takes over now
  LeaseKeeper(const LeaseKeeper&) = delete;
  LeaseKeeper& operator=(const LeaseKeeper&) = delete;

  void Start();
  enum class Wait {
    kLeads,    // this instance leads: run a term
    kStopped,  // `stop` was requested
    // JetStream behind this connection has answered nothing for a lease TTL while connected
    // (common/js_reach.h): the caller drops this keeper and its connection and connects again
    // avoiding this server.
    kMove,
  };
  // Blocks until one of the above.
  Wait WaitForLeadership(StopFlag& stop);
  // How long the bucket has answered nothing (0 while it answers); for the move's log line.
  std::chrono::milliseconds JetStreamSilentFor() const;
  // Ties `term` to the current lease (see above); nullptr unties. The flag must stay alive
  // until it is untied.
  void BindTerm(StopFlag* term);
  bool Leads() const;
  // What the leader says of its work, written with the next renewal (LeaseHolder::status).
  // Any thread.
  void SetStatus(std::map<std::string, int64_t> status);

 private:
  void Loop();
  void Apply(LeaseDecision::Change change);                            // mu_ held
  void NoteCreateFailure(const Error& e, LeaseClock::time_point now);  // mu_ held

  NatsClient& nats_;
  const std::string key_;
  LeaseHolder self_;
  metrics::Gauge& leader_gauge_;
  metrics::Counter& changes_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  LeaseDecision decision_;
  StopFlag* term_ = nullptr;
  bool stop_ = false;
  std::unique_ptr<KvBucket> bucket_;               // keeper thread only
  LeaseClock::time_point create_failing_since_{};  // creates unanswered since; {} = answered
  JetStreamReach reach_{LeaseTiming{}.ttl};        // limit: the bucket's TTL once bound
  LogLimiter create_warn_{1, std::chrono::minutes(1)};
  std::thread thread_;
};

}  // namespace common
