// A NATS connection with JetStream, and the mapping of nats.c statuses to our Error kinds.
//
// Adapter: this file and the other nats_*.cpp files are the only ones that include nats.c.
// Ownership: NatsClient owns the connection and its JetStream context and closes them in its
// destructor. Thread-safety: nats.c connections are thread-safe, so conn()/js() may be used from
// any thread while the NatsClient lives.
#pragma once

#include <memory>
#include <string>

#include "common/config.h"
#include "common/result.h"

typedef struct __natsConnection natsConnection;
typedef struct __jsCtx jsCtx;

namespace core {

class NatsClient {
 public:
  struct Options {
    std::string client_name;
    bool retry_first_connect = false;  // services keep trying at start; platformctl fails fast
    bool send_asap = true;             // no ~1 ms write coalescing (MEASURED.md)
    int64_t request_timeout_ms = 5000;
  };

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
  natsConnection* conn() const { return conn_; }
  jsCtx* js() const { return js_; }
  int64_t request_timeout_ms() const { return timeout_ms_; }
  // A new unique reply subject under this connection's inbox prefix (the one nats.c's own
  // requests use), for a subscription that gathers replies to requests sent by hand.
  Result<std::string> NewInbox() const;

 private:
  NatsClient() = default;
  natsConnection* conn_ = nullptr;  // owned
  jsCtx* js_ = nullptr;             // owned
  int64_t timeout_ms_ = 5000;
  CommonConfig config_;  // for Sibling()
};

// Calls nats_Close() at scope exit so leak checkers see nats.c's globals released.
class NatsLibraryGuard {
 public:
  NatsLibraryGuard() = default;
  ~NatsLibraryGuard();
  NatsLibraryGuard(const NatsLibraryGuard&) = delete;
  NatsLibraryGuard& operator=(const NatsLibraryGuard&) = delete;
};

}  // namespace core
