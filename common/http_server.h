// Serves /metrics (Prometheus text) and /healthz over HTTP, with cpp-httplib.
//
// Ownership: the server borrows the Registry and the health callback; both must outlive it.
// Threads: Start() spawns the listener thread; the health callback and collectors run on
// cpp-httplib's worker threads. Start/Stop are called from the owning (main) thread only.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "common/metrics.h"
#include "common/result.h"

namespace httplib {
class Server;
}

namespace core {

struct Health {
  bool ok = true;
  std::string detail;  // one line per check, shown in the body
};

class MetricsServer {
 public:
  MetricsServer(const metrics::Registry& registry, std::function<Health()> health);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // Binds host:port ("127.0.0.1:0" picks a free port) and serves in the background.
  Status Start(const std::string& host_port);
  int port() const { return port_; }
  void Stop();

 private:
  const metrics::Registry& registry_;
  std::function<Health()> health_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace core
