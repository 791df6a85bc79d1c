// Asynchronous JetStream publishing with a completion per message.
//
// Adapter over nats.c (see nats_client.h). Ownership: AsyncPublisher owns its own JetStream
// context (nats.c keeps one ack handler per context) and borrows the NatsClient.
// Threads: Publish() may be called from any thread. The completion callback runs on a nats.c
// thread: it must be quick, must not throw, and must not call back into this publisher.
// Every publish completes: one whose answer does not come within the client's request timeout
// completes with a timeout error (nats.c's MaxWait). Without that, an answer lost with a crashed
// server would hold one of max_pending places for ever, and enough of them stall every later
// publish. Callers publish again on an error (the operations we publish this way are idempotent).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "common/nats_client.h"
#include "common/nats_stream.h"
#include "common/result.h"

typedef struct __natsMsg natsMsg;

namespace common {

class AsyncPublisher {
 public:
  using Completion = std::function<void(uint64_t tag, const Status& status)>;

  static Result<std::unique_ptr<AsyncPublisher>> Create(NatsClient& client, Completion done,
                                                        int max_pending = 4096);
  ~AsyncPublisher();
  AsyncPublisher(const AsyncPublisher&) = delete;
  AsyncPublisher& operator=(const AsyncPublisher&) = delete;

  // Hands the message to nats.c; `done(tag, …)` follows once the stream answered. An error
  // returned here means no completion will come.
  Status Publish(const OutMessage& message, uint64_t tag);

 private:
  AsyncPublisher() = default;
  friend struct AsyncPublisherAccess;
  void Complete(natsMsg* msg, const Status& status);

  jsCtx* js_ = nullptr;  // owned
  int64_t max_wait_ms_ = 0;
  Completion done_;
  std::mutex mu_;
  std::unordered_map<natsMsg*, uint64_t> tags_;
};

}  // namespace common
