// Leadership lease: the decisions, without I/O (docs/contract.md §1, "Two core nodes").
//
// One lease per service lives in the KV bucket `locks` under the service's name; the bucket's
// max age is the lease TTL, so a key nobody renews disappears on the server after the TTL.
// - A follower tries create-if-absent every `poll`; success makes it the leader.
// - A leader renews with an update on the last revision every `renew_every`; the first failed
//   renewal ends its leadership at once.
// - A leader also ends its leadership by itself at `valid_until` = (send time of its last
//   successful create or renewal) + TTL − margin. The server cannot expire the key before
//   put time + TTL ≥ send time + TTL, so the old leader has stopped before a follower can
//   create the key: two leaders overlap only if this process is paused (SIGSTOP, a VM stall)
//   across its own deadline, which the duplicate guard and the batch ids absorb
//   (docs/operations.md, "Leadership").
// LeaseDecision is a plain value class driven by one thread with an injected clock.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace common {

using LeaseClock = std::chrono::steady_clock;

// Who holds a lease: the KV value, JSON.
struct LeaseHolder {
  std::string instance;  // INSTANCE_NAME
  std::string host;
  int64_t pid = 0;
  int64_t started_unix_ms = 0;   // when the process started
  int64_t acquired_unix_ms = 0;  // when this holder took the lease (kept across renewals)
  // What the leader says of its work, renewed with the lease (at most a renewal old): counts
  // by name, e.g. the replayer's "blocked_visitors" and "blocked_sites". Empty: nothing said.
  std::map<std::string, int64_t> status;

  std::string ToJson() const;
  // nullopt when the value is not a holder record.
  static std::optional<LeaseHolder> FromJson(const std::string& text);
  // "instance (host, pid 123)".
  std::string Describe() const;
};

struct LeaseTiming {
  std::chrono::milliseconds ttl{15'000};
  std::chrono::milliseconds renew_every{5'000};  // ttl / 3
  std::chrono::milliseconds margin{3'000};       // ttl / 5: kept back from the server's expiry
  std::chrono::milliseconds poll{1'000};         // a follower's create attempts

  static LeaseTiming ForTtl(std::chrono::milliseconds ttl);
};

class LeaseDecision {
 public:
  enum class Op { kNone, kCreate, kRenew };
  struct Action {
    Op op = Op::kNone;
    uint64_t revision = 0;  // kRenew: the revision to update on
  };
  enum class Change { kNone, kGained, kLost };

  explicit LeaseDecision(LeaseTiming timing) : t_(timing) {}

  // What to do now. A leader past its deadline loses here (Change kLost via TakeChange()).
  Action Next(LeaseClock::time_point now);
  // Results of the operation Next() asked for; `sent` is when the request was sent.
  void OnCreated(LeaseClock::time_point sent, uint64_t revision);
  void OnCreateRefused(LeaseClock::time_point now);  // held by someone, or the request failed
  void OnRenewed(LeaseClock::time_point sent, uint64_t revision);
  void OnRenewFailed(LeaseClock::time_point now);
  // This instance gives the lease up (shutdown): it stops leading now.
  void Resign();

  bool leader() const { return leader_; }
  // Leads and is inside its deadline.
  bool Leads(LeaseClock::time_point now) const { return leader_ && now < valid_until_; }
  LeaseClock::time_point valid_until() const { return valid_until_; }
  uint64_t revision() const { return revision_; }
  // The last transition, once.
  Change TakeChange();

 private:
  void Lose();

  LeaseTiming t_;
  bool leader_ = false;
  uint64_t revision_ = 0;
  LeaseClock::time_point valid_until_{};
  LeaseClock::time_point next_op_{};
  Change change_ = Change::kNone;
};

}  // namespace common
