#include "common/http_server.h"

#include <httplib.h>

namespace core {

MetricsServer::MetricsServer(const metrics::Registry& registry, std::function<Health()> health)
    : registry_(registry),
      health_(std::move(health)),
      server_(std::make_unique<httplib::Server>()) {
  // cpp-httplib writes headers and body separately; without TCP_NODELAY Nagle delays each reply.
  server_->set_tcp_nodelay(true);
  server_->Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(registry_.Expose(), "text/plain; version=0.0.4; charset=utf-8");
  });
  server_->Get("/healthz", [this](const httplib::Request&, httplib::Response& res) {
    Health h = health_ ? health_() : Health{};
    res.status = h.ok ? 200 : 503;
    res.set_content((h.ok ? "ok\n" : "unhealthy\n") + h.detail, "text/plain; charset=utf-8");
  });
}

MetricsServer::~MetricsServer() { Stop(); }

Status MetricsServer::Start(const std::string& host_port) {
  auto colon = host_port.rfind(':');
  if (colon == std::string::npos) return Error::Invalid("METRICS_LISTEN: not host:port");
  std::string host = host_port.substr(0, colon);
  int port = std::stoi(host_port.substr(colon + 1));
  if (port == 0) {
    port_ = server_->bind_to_any_port(host);
    if (port_ < 0) return Error::Retryable("cannot bind " + host + " to any port");
  } else {
    if (!server_->bind_to_port(host, port)) {
      return Error::Retryable("cannot listen on " + host_port + " (in use or not local?)");
    }
    port_ = port;
  }
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  return Status::Ok();
}

void MetricsServer::Stop() {
  if (thread_.joinable()) {
    server_->stop();
    thread_.join();
  }
}

}  // namespace core
