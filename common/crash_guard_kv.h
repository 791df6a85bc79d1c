// The crash-loop guard (crash_guard.h) over KV `crash_guard`: the markers a service writes
// before it reads a redelivered message and removes after.
//
// When the bucket or NATS fails the guard, the message is read anyway (a guard that holds good
// messages while NATS is slow would stop the queue it protects), and so are the redeliveries
// of the next 30 s (crash_guard::Rest: a silent bucket must not cost a request timeout per
// message); a marker that could not be removed is tried again before the next message is read
// once the rest is over (a marker left behind would have the next delivery dead-lettered).
// Ownership: owns its KvBucket; borrows the NatsClient (outlives the guard).
// Thread-safety: one thread, the one that reads the messages.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/crash_guard.h"
#include "common/nats_client.h"
#include "common/nats_kv.h"

namespace common {

class CrashGuard {
 public:
  // `durable`: the consumer's name (the markers' key prefix); `instance`: INSTANCE_NAME. With no
  // bucket `crash_guard` (platformctl init creates it) the guard is off, which is logged.
  static std::unique_ptr<CrashGuard> Bind(NatsClient& nats, std::string durable,
                                          std::string instance);

  struct Verdict {
    bool dead_letter = false;  // do not read it: dead-letter it with crash_guard::kReason
    std::string detail;        // the evidence, for the dead letter's detail
    bool marked = false;       // a marker was written: call Done() once the reading ended
    uint64_t seq = 0;
  };
  // Before the messages of a fetched batch are read one after another: the markers of its
  // redeliveries are read in one round trip, and Before() takes them from there. `batch`: each
  // message's (stream sequence, delivery count).
  void Prefetch(const std::vector<std::pair<uint64_t, uint64_t>>& batch);
  // Before a message is read. A removal Done() deferred goes out with this message's marker in
  // one round trip (or alone, when this message needs no marker), and is answered before this
  // returns: while a message is read, no other message's marker of this process is there (a
  // reader that stops then counts a stop on this message only).
  Verdict Before(uint64_t stream_seq, uint64_t num_delivered);
  // Once the reading of a message Before() marked has ended, whatever it found. `defer`: the
  // marker's removal waits for the next Before() or Flush(); the caller reads nothing before
  // one of them. A redelivery then costs one round trip besides its batch's Prefetch, not three
  // (a restarted replayer's 867 held messages took 60 s and more that way on a loaded machine).
  void Done(const Verdict& v, bool defer = false);
  // Sends the removal Done() deferred, if any, and awaits it.
  void Flush();

  bool on() const { return bucket_ != nullptr; }

 private:
  CrashGuard() = default;
  // Logs the failure and starts a rest.
  void Failed(const std::string& what, const Error& e);
  void RemoveLeftBehind();

  std::unique_ptr<KvBucket> bucket_;  // nullptr: off
  std::string durable_, instance_;
  std::vector<uint64_t> not_removed_;  // markers whose delete failed, tried again
  std::optional<uint64_t> deferred_;   // the marker whose removal Done() deferred
  // Prefetch()'s answers, by stream sequence, until Before() takes them.
  std::unordered_map<uint64_t, Result<std::optional<KvValue>>> prefetched_;
  uint64_t failures_ = 0;
  crash_guard::Rest rest_{crash_guard::kRestAfterFailure};
  uint64_t unguarded_ = 0;  // redeliveries read without the guard in the rests so far
};

}  // namespace common
