// Serves /metrics (Prometheus text) and /healthz over HTTP/1.1 with a small server of our own
// (common/http_loop.h): one epoll thread holds every connection, so an idle connection costs a
// file descriptor and no thread. civetweb, used before, gave each connection a worker thread
// until its request came, and 2,000 idle connections kept /healthz from answering (issue 35).
//
// Hardened for a port an attacker may reach (docs/operations.md, "Connections and endpoints"):
// - every connection has kRequestTimeoutMs from its accept to send its whole request head (at
//   most kMaxHeadBytes, else 431), then as long again to take its whole answer; then it is
//   closed. Progress does not extend the time: a byte a second buys nothing.
// - one request per connection (Connection: close); GET and HEAD only (405), two paths (404).
// - at most max_connections() open at once: kMaxConnections, or half of RLIMIT_NOFILE when that
//   is lower (the rest is the service's own). One more closes the one nearest its deadline, so
//   a new /healthz gets in even while an attacker holds the cap.
// - Start() raises the soft RLIMIT_NOFILE to the hard limit: 2,000 idle connections need more
//   than the usual soft limit of 1,024 descriptors.
// - the port is bound without SO_REUSEPORT: a second process on the same address fails at start
//   instead of sharing the scrapes.
// Measured (docs/measured.md, "The metrics endpoint under idle connections";
// bench/metrics_server_idle): with 2,000 idle connections open, /healthz and /metrics answer in
// milliseconds; civetweb left /healthz unanswered for over 5 s.
//
// Ownership: the server borrows the Registry and the health callback; both must outlive it.
// Threads: Start() starts two threads. The event thread accepts, reads, writes and calls the
// health callback, which must therefore be quick (an atomic or a short lock, as every service's
// is). The scrape thread runs Registry::Expose() (the collectors, which may ask JetStream), one
// at a time: /metrics requests that arrive while one runs share the next one, and a slow
// exposition does not hold up /healthz. Start/Stop are called from the owning (main) thread
// only; Stop() returns once both threads are joined and every connection is closed (at once,
// unless an exposition is running: it is waited for).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "common/metrics.h"
#include "common/result.h"

namespace common {

namespace http {
class Loop;
}

struct Health {
  bool ok = true;
  std::string detail;  // one line per check, shown in the body
};

class MetricsServer {
 public:
  static constexpr int kMaxConnections = 4096;
  // Connections the kernel holds for accept() (capped by net.core.somaxconn, 4096 on current
  // kernels): a burst of new ones beyond it has SYNs dropped, and a client waits 1 s to retry.
  static constexpr int kBacklog = kMaxConnections;
  static constexpr int kRequestTimeoutMs = 3000;
  static constexpr int kMaxHeadBytes = 8192;
  // How long a complete /metrics request waits for its exposition (a collector asking JetStream may
  // take seconds; Prometheus gives up after 10 s by default).
  static constexpr int kScrapeTimeoutMs = 30000;

  MetricsServer(const metrics::Registry& registry, std::function<Health()> health);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // Binds host:port, host an IPv4 address ("127.0.0.1:0" picks a free port), and serves in the
  // background. A malformed address is kInvalid; an address that cannot be bound (in use, not
  // local) is kPermanent, with the reason.
  Status Start(const std::string& host_port);
  int port() const { return port_; }
  // Connections held at most, set by Start().
  int max_connections() const { return max_connections_; }
  void Stop();

 private:
  const metrics::Registry& registry_;
  std::function<Health()> health_;
  std::unique_ptr<http::Loop> loop_;  // set while serving (common/http_loop.h)
  int port_ = 0;
  int max_connections_ = 0;
};

// Parses "a.b.c.d:port" (port 0..65535). False when malformed.
bool ParseListenAddress(const std::string& host_port, std::string* host, int* port);

}  // namespace common
