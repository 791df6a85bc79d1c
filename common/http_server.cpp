#include "common/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <spdlog/spdlog.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <system_error>

#include "common/http_loop.h"
#include "common/http_request.h"
#include "common/unique_fd.h"

namespace common {

namespace {

std::string ErrnoText(int err) { return std::error_code(err, std::system_category()).message(); }

// Raises the soft limit on open files to the hard one; returns the soft limit then in force.
rlim_t RaiseFileLimit() {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0) return 1024;
  if (lim.rlim_cur < lim.rlim_max) {
    rlimit want = lim;
    want.rlim_cur = lim.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &want) == 0) lim = want;
  }
  return lim.rlim_cur;
}

}  // namespace

bool ParseListenAddress(const std::string& host_port, std::string* host, int* port) {
  auto colon = host_port.rfind(':');
  if (colon == std::string::npos) return false;
  std::string h = host_port.substr(0, colon);
  std::string p = host_port.substr(colon + 1);
  in_addr addr{};
  if (inet_pton(AF_INET, h.c_str(), &addr) != 1) return false;
  int n = -1;
  auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), n);
  if (p.empty() || p.size() > 5 || ec != std::errc() || end != p.data() + p.size() || n < 0 ||
      n > 65535) {
    return false;
  }
  *host = h;
  *port = n;
  return true;
}

MetricsServer::MetricsServer(const metrics::Registry& registry, std::function<Health()> health)
    : registry_(registry), health_(std::move(health)) {}

MetricsServer::~MetricsServer() { Stop(); }

Status MetricsServer::Start(const std::string& host_port) {
  std::string host;
  int port = 0;
  if (!ParseListenAddress(host_port, &host, &port)) {
    return Error::Invalid("'" + host_port + "' is not IPv4-address:port (e.g. 0.0.0.0:9464)");
  }
  Stop();
  auto fail = [&](int err) {
    return Error::Permanent(
        "cannot serve /metrics and /healthz on " + host_port + ": " + ErrnoText(err) +
        (err == EADDRINUSE ? " (another process, perhaps a second instance, has it)" : ""));
  };
  // Half of what the process may open, so that a flood of connections cannot take the files its
  // NATS, database and Umami connections need.
  max_connections_ = static_cast<int>(
      std::clamp<rlim_t>(RaiseFileLimit() / 2, 16, static_cast<rlim_t>(kMaxConnections)));
  UniqueFd listener(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!listener) return fail(errno);
  // SO_REUSEADDR lets a restart bind while the last run's connections are in TIME_WAIT; unlike
  // SO_REUSEPORT it does not let a second process listen on the port as well.
  int one = 1;
  setsockopt(listener.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, host.c_str(), &addr.sin_addr);
  if (bind(listener.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(listener.get(), kBacklog) != 0) {
    return fail(errno);
  }
  socklen_t len = sizeof(addr);
  getsockname(listener.get(), reinterpret_cast<sockaddr*>(&addr), &len);
  UniqueFd epoll(epoll_create1(EPOLL_CLOEXEC));
  if (!epoll) return fail(errno);
  UniqueFd wake(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!wake) return fail(errno);
  port_ = ntohs(addr.sin_port);

  http::Limits limits;
  limits.max_connections = static_cast<size_t>(max_connections_);
  limits.request_timeout_ms = kRequestTimeoutMs;
  limits.max_head_bytes = kMaxHeadBytes;
  limits.scrape_timeout_ms = kScrapeTimeoutMs;
  http::Handlers handlers;
  // Neither may throw into the loop.
  handlers.health = [this](bool head_only) {
    try {
      Health h = health_ ? health_() : Health{};
      return http::Answer(h.ok ? 200 : 503, "text/plain; charset=utf-8",
                          (h.ok ? "ok\n" : "unhealthy\n") + h.detail, head_only);
    } catch (const std::exception& e) {
      spdlog::error("/healthz: {}", e.what());
      return http::ErrorAnswer(500, head_only);
    }
  };
  handlers.scrape = [this]() -> std::optional<std::string> {
    try {
      return registry_.Expose();
    } catch (const std::exception& e) {
      spdlog::error("/metrics: {}", e.what());
      return std::nullopt;
    }
  };
  loop_ = std::make_unique<http::Loop>(std::move(listener), std::move(epoll), std::move(wake),
                                       limits, std::move(handlers));
  if (max_connections_ < kMaxConnections) {
    spdlog::warn(
        "metrics endpoint: at most {} connections (the open-files "
        "limit is low)",
        max_connections_);
  }
  return Status::Ok();
}

void MetricsServer::Stop() { loop_.reset(); }

}  // namespace common
