// Serves /metrics (Prometheus text) and /healthz over HTTP, with civetweb (Debian's
// libcivetweb, the server prometheus-cpp-pull's Exposer is built on; the Exposer itself has no
// way to serve a health check with its own status code, so we register both handlers here).
//
// Hardened for a port an attacker may reach: every connection gets kRequestTimeoutMs to send its
// whole request head and to make progress on every write, then it is closed; one request per
// connection (no keep-alive); kWorkers connections are served at once, kQueue more wait, and the
// kernel holds kBacklog beyond that. So 64 clients that open a connection and send nothing (or
// one byte a second) leave workers free for /healthz. The port is bound without SO_REUSEPORT:
// a second process on the same address fails at start instead of sharing the scrapes.
//
// Ownership: the server borrows the Registry and the health callback; both must outlive it.
// Threads: Start() starts civetweb's threads (one listener, kWorkers workers); the health
// callback and the registry's collectors run on the workers, several at once. Start/Stop are
// called from the owning (main) thread only.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <string>

#include "common/metrics.h"
#include "common/result.h"

struct mg_context;
struct mg_connection;

namespace common {

struct Health {
  bool ok = true;
  std::string detail;  // one line per check, shown in the body
};

class MetricsServer {
 public:
  static constexpr int kWorkers = 96;
  static constexpr int kQueue = 64;
  static constexpr int kBacklog = 64;
  static constexpr int kRequestTimeoutMs = 3000;

  MetricsServer(const metrics::Registry& registry, std::function<Health()> health);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // Binds host:port, host an IPv4 address ("127.0.0.1:0" picks a free port), and serves in the
  // background. A malformed address is kInvalid; an address that cannot be bound (in use, not
  // local) is kPermanent, with civetweb's reason.
  Status Start(const std::string& host_port);
  int port() const { return port_; }
  void Stop();

 private:
  static int HandleMetrics(mg_connection* conn, void* self);
  static int HandleHealth(mg_connection* conn, void* self);
  static int LogMessage(const mg_connection* conn, const char* message);

  const metrics::Registry& registry_;
  std::function<Health()> health_;
  mg_context* ctx_ = nullptr;  // owned: mg_stop() in Stop()
  bool library_ = false;       // mg_init_library() called, mg_exit_library() owed
  std::atomic<bool> starting_{false};
  std::mutex log_mu_;
  std::string start_log_;  // guarded by log_mu_: civetweb's messages while starting (bind errors)
  std::string host_;
  int port_ = 0;
};

// Parses "a.b.c.d:port" (port 0..65535). False when malformed.
bool ParseListenAddress(const std::string& host_port, std::string* host, int* port);

}  // namespace common
