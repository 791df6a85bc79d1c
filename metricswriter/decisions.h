// The writer's decisions as plain classes with no I/O and an injected time, so tests run them
// instantly: when to retry, when a group is full, and how to find the batch in a group that the
// database rejects for its content. Each object is used by one thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace mw {

using Clock = std::chrono::steady_clock;
using Millis = std::chrono::milliseconds;

// Exponential backoff with full jitter: attempt n waits a uniform time in [base*2^n / 2,
// base*2^n], capped at `max`. Jitter keeps two writers (or two replicas after a database
// restart) from retrying in lockstep. `rand01` is injected: a value in [0, 1).
class Backoff {
 public:
  Backoff(Millis base, Millis max) : base_(base), max_(max) {}
  Millis Next(double rand01);
  void Reset() { attempt_ = 0; }
  int attempts() const { return attempt_; }

 private:
  Millis base_, max_;
  int attempt_ = 0;
};

// The shortest pull request the intake makes. nats-server may answer a request of a few
// milliseconds after nats.c stopped waiting for it (seen with 2.9: a 1 ms request kept taking
// messages for about a second); those messages then wait unseen in the client, not kept alive,
// until the next fetch, and come back as redeliveries when that is later than the ack wait.
inline constexpr Millis kMinFetchWait{50};

// When a group of fetched batches is written: when it is full (batches or points), or when
// `linger` passed since its first batch arrived (so a trickle is still stored promptly).
class GroupPolicy {
 public:
  GroupPolicy(size_t max_batches, size_t max_points, Millis linger)
      : max_batches_(max_batches), max_points_(max_points), linger_(linger) {}
  bool Full(size_t batches, size_t points) const {
    return batches >= max_batches_ || points >= max_points_;
  }
  bool Due(size_t batches, size_t points, Clock::time_point first, Clock::time_point now) const {
    return batches > 0 && (Full(batches, points) || now - first >= linger_);
  }
  // How long the next fetch may wait: the rest of the linger (at least kMinFetchWait), or
  // `idle` with nothing held.
  Millis FetchWait(size_t batches, Clock::time_point first, Clock::time_point now,
                   Millis idle) const;
  size_t max_batches() const { return max_batches_; }

 private:
  size_t max_batches_, max_points_;
  Millis linger_;
};

// Splits items of the given sizes into runs of consecutive items whose sizes add up to at most
// `max_bytes` (an item bigger than that is a run of its own); returns each run's end index.
// The series a group creates go to PostgreSQL in such runs (Store, kSeriesStatementBytes): a
// statement's text exists about three times at once (our array literals, libpq's output buffer
// that grows by doubling), outside the byte budget, so one statement for every new series of a
// group cost several times the group's decoded size: 177 MiB over a 64 MiB budget with 3,000
// series a batch and 900 bytes of attributes each (bench/service_memory).
std::vector<size_t> SplitByBytes(const std::vector<size_t>& sizes, size_t max_bytes);

// Finds the batches of a group that the database rejects for their content, by bisection: the
// group is tried whole; a rejected range is split in two and each half tried; a rejected single
// batch is set aside (dead-lettered). One poison batch among n costs about 2*log2(n) extra
// transactions and every other batch is stored. A retryable failure is not reported here: the
// caller retries the same range.
class Isolator {
 public:
  struct Range {
    size_t begin = 0, end = 0;
    size_t size() const { return end - begin; }
  };
  explicit Isolator(size_t n);
  bool Done() const { return work_.empty(); }
  Range Current() const { return work_.back(); }
  void Stored() { work_.pop_back(); }
  // The current range was rejected for its content. Returns true when it was one batch (now
  // set aside); false when it was split and its halves come next.
  bool Rejected();

 private:
  std::vector<Range> work_;  // a stack: the back is tried next
};

}  // namespace mw
