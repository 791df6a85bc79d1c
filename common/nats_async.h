// Asynchronous JetStream publishing with a completion per message.
//
// Adapter over nats.c (see nats_client.h). Each publish goes out as a plain request whose reply
// subject is <inbox>.<id> on one wildcard subscription the publisher owns; the stream's answer
// (common/pub_answer.h) completes it. Why not nats.c's js_PublishMsgAsync: on this machine its
// bookkeeping cost about 6 µs more CPU per publish than this path, measured side by side by
// bench/replayer_floor (docs/measured.md, "The replayer's own cost after batches").
//
// Ownership: AsyncPublisher owns its subscription and its timeout thread and borrows the
// NatsClient, which must outlive it. Threads: Publish() may be called from any thread. The
// completion callback runs on the subscription's nats.c thread or on the timeout thread, possibly
// both at once for different tags: it must be thread-safe and quick, must not throw, and must not
// call back into this publisher. Every publish completes exactly once: one whose answer does not
// come within the client's request timeout completes with a timeout error (a late answer is then
// ignored). Without that, an answer lost with a crashed server would hold one of max_pending
// places for ever, and enough of them stall every later publish. Callers publish again on an
// error (the operations we publish this way are idempotent).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

#include "common/nats_client.h"
#include "common/nats_stream.h"
#include "common/result.h"

typedef struct __natsMsg natsMsg;
typedef struct __natsSubscription natsSubscription;

namespace common {

class AsyncPublisher {
 public:
  using Completion = std::function<void(uint64_t tag, const Status& status)>;

  static Result<std::unique_ptr<AsyncPublisher>> Create(NatsClient& client, Completion done,
                                                        int max_pending = 4096);
  // Waits up to 2 s for the answers still due, then stops: no completion comes after it returns.
  ~AsyncPublisher();
  AsyncPublisher(const AsyncPublisher&) = delete;
  AsyncPublisher& operator=(const AsyncPublisher&) = delete;

  // Writes the message; `done(tag, …)` follows once the stream answered or the request timeout
  // passed. With max_pending answers due, waits up to the request timeout for a place. An error
  // returned here means no completion will come.
  Status Publish(const OutMessage& message, uint64_t tag);

 private:
  using Clock = std::chrono::steady_clock;
  struct Due {
    uint64_t tag;
    Clock::time_point deadline;
  };
  friend struct AsyncPublisherAccess;
  AsyncPublisher() = default;
  void OnAnswer(natsMsg* msg);
  void ExpireLoop();
  // Takes the entry for `id` out of the table (false: already completed) and frees its place.
  bool Take(uint64_t id, uint64_t* tag);

  NatsClient* client_ = nullptr;
  natsSubscription* sub_ = nullptr;  // owned
  std::string inbox_;                // "<inbox>." : a reply subject is this and the id
  std::chrono::milliseconds max_wait_{0};
  size_t max_pending_ = 0;
  Completion done_;

  std::mutex mu_;
  std::condition_variable room_cv_;  // a place freed (Publish waits for one)
  std::condition_variable stop_cv_;  // the timeout thread's sleep, cut short by the destructor
  std::condition_variable sub_done_cv_;
  bool stopping_ = false;
  bool sub_done_ = false;
  uint64_t next_id_ = 1;
  std::unordered_map<uint64_t, Due> due_;  // id -> the publish awaiting its answer
  std::deque<std::pair<Clock::time_point, uint64_t>> order_;  // (deadline, id), oldest first
  std::thread expirer_;
};

}  // namespace common
