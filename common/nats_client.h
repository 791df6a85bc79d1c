// A NATS connection with JetStream, and the mapping of nats.c statuses to our Error kinds.
//
// Adapter: this file and the other nats_*.cpp files are the only ones that include nats.c.
// Ownership: NatsClient owns the connection and its JetStream context and closes them in its
// destructor. Thread-safety: nats.c connections are thread-safe, so conn()/js() may be used from
// any thread while the NatsClient lives; Close() too.
//
// Connecting: one attempt tries each server once; one server (TCP, TLS, the NATS handshake) takes
// at most CommonConfig::nats_connect_timeout. With Options::retry_until_stopped (the services)
// Connect() tries again every 0.5 s until a server answers or the flag stops, logging each
// failed attempt with its reason (the first three, then one line a minute with the count).
// Once connected, nats.c reconnects by itself for ever and the same is logged per round.
// TLS: tls:// URLs make the connection TLS only (a server without TLS is refused); the server's
// certificate is checked against NATS_CA (else the system's trust store) and its host name
// against the URL's host. NATS_CERT/NATS_KEY are sent for mutual TLS.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/config.h"
#include "common/result.h"
#include "common/stop_signal.h"

typedef struct __natsConnection natsConnection;
typedef struct __jsCtx jsCtx;
typedef struct __natsSubscription natsSubscription;

namespace common {

class NatsClient {
 public:
  struct Options {
    std::string client_name;
    // Services: Connect() keeps trying until a server answers or this flag stops (then it fails,
    // kRetryable). Null (platformctl): one attempt.
    StopFlag* retry_until_stopped = nullptr;
    bool send_asap = true;  // no ~1 ms write coalescing (docs/measured.md)
    int64_t request_timeout_ms = 5000;
    // A server the last connection used whose JetStream stopped answering (common/js_reach.h):
    // tried last, the others first in a random order. Empty: nats.c's own random order.
    std::string avoid_url;
  };

  // Errors: kInvalid for a TLS file nats.c cannot load (names the variable), kRetryable when no
  // server could be reached (without retry_first_connect), else as NatsError maps them.
  static Result<std::unique_ptr<NatsClient>> Connect(const CommonConfig& config,
                                                     const Options& options);
  // Another connection to the same servers with the same credentials and other options, e.g.
  // send_asap = false for a path of many small writes (acks) that gains from coalescing.
  Result<std::unique_ptr<NatsClient>> Sibling(const Options& options) const;
  ~NatsClient();
  NatsClient(const NatsClient&) = delete;
  NatsClient& operator=(const NatsClient&) = delete;

  bool Connected() const;
  std::string ConnectedUrl() const;
  // Round trip to the server: everything written before (acks, naks) has reached it.
  Status Flush(int64_t timeout_ms);
  // Closes the connection now, and those of its siblings, from any thread: every call waiting
  // on them (a request, a fetch, a flush) returns at once with "connection closed", and no
  // reconnect follows. The objects stay usable (calls fail) until destroyed. Waits for a
  // reconnect attempt under way to end.
  void Close();
  natsConnection* conn() const { return conn_; }
  jsCtx* js() const { return js_; }
  int64_t request_timeout_ms() const { return timeout_ms_; }
  // A new unique reply subject under this connection's inbox prefix (the one nats.c's own
  // requests use), for a subscription that gathers replies to requests sent by hand.
  Result<std::string> NewInbox() const;

 private:
  struct Events;  // the connection's callbacks' state; nats.c's closed callback frees it
  struct Group;   // this connection and its siblings
  NatsClient() = default;
  void Join();   // a group of its own
  void Leave();  // group_->mu held (or no other member yet)
  void CloseOwn();
  natsConnection* conn_ = nullptr;              // owned
  jsCtx* js_ = nullptr;                         // owned
  std::shared_ptr<std::atomic<bool>> closing_;  // shared with the callbacks' Events
  std::shared_ptr<Group> group_;
  int64_t timeout_ms_ = 5000;
  CommonConfig config_;    // for Sibling()
  std::string avoid_url_;  // for Sibling()
};

// The service's current connection, for the threads that only ask whether it stands (/healthz,
// the metrics collector), while the service may replace it (a move away from a server whose
// JetStream stopped answering). Thread-safety: any thread.
class ConnectionSlot {
 public:
  void Set(std::shared_ptr<NatsClient> client) {
    std::lock_guard lock(mu_);
    client_ = std::move(client);
  }
  bool Connected() const {
    std::lock_guard lock(mu_);
    return client_ != nullptr && client_->Connected();
  }

 private:
  mutable std::mutex mu_;
  std::shared_ptr<NatsClient> client_;
};

// Makes a SIGTERM end every wait on NATS while NATS cannot be reached: from the moment `stop`
// is requested, the connection (and its siblings) is closed as soon as it is not connected or
// its server does not answer a ping within kStopProbeMs, so a request, fetch or flush waiting
// on it returns instead of running into its timeout, and the process exits. While the server
// answers, nothing is forced: the service finishes in order (hands back what it holds,
// releases its lease). Owns one thread.
// Declare it after the NatsClient and before what uses the connection, so it outlives them.
class NatsStopGuard {
 public:
  static constexpr int kStopProbeMs = 700;
  NatsStopGuard(NatsClient& nats, const StopFlag& stop);
  ~NatsStopGuard();
  NatsStopGuard(const NatsStopGuard&) = delete;
  NatsStopGuard& operator=(const NatsStopGuard&) = delete;

 private:
  StopFlag done_;
  std::thread thread_;
};

// Unsubscribes and destroys `sub`, a subscription of `client`'s connection. When messages may
// still reach it (a push consumer's deliveries, a reply that came late), pass `quiesce`: a PING
// round trip (at most `wait_ms`) after the unsubscribe lets the read loop finish with whatever
// the server sent before it. Why: nats.c 3.4 (Debian 12's) crashes its read loop when a
// subscription is destroyed while a message for it is being delivered (nats.c issue 637, fixed
// in 3.6); a dlq list under ASan hit it. Any thread; `sub` is gone afterwards.
void DestroySubscription(NatsClient& client, natsSubscription* sub, bool quiesce,
                         int64_t wait_ms = 2000);

// Calls nats_Close() at scope exit so leak checkers see nats.c's globals released.
class NatsLibraryGuard {
 public:
  NatsLibraryGuard() = default;
  ~NatsLibraryGuard();
  NatsLibraryGuard(const NatsLibraryGuard&) = delete;
  NatsLibraryGuard& operator=(const NatsLibraryGuard&) = delete;
};

}  // namespace common
