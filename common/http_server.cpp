#include "common/http_server.h"

#include <arpa/inet.h>
#include <civetweb.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cstring>
#include <thread>

namespace common {

namespace {

// One whole response, then civetweb closes the connection (keep-alive is off).
void Reply(mg_connection* conn, int status, const char* reason, const std::string& content_type,
           const std::string& body, bool head, const char* extra_headers = "") {
  std::string out = "HTTP/1.1 " + std::to_string(status) + " " + reason +
                    "\r\nContent-Type: " + content_type +
                    "\r\nContent-Length: " + std::to_string(body.size()) +
                    "\r\nCache-Control: no-store\r\n" + extra_headers + "Connection: close\r\n\r\n";
  if (!head) out += body;
  mg_write(conn, out.data(), out.size());
}

// GET and HEAD only; anything else is answered 405 here. Returns true when the request is a GET
// or HEAD (*head tells which).
bool ReadOnly(mg_connection* conn, bool* head) {
  const mg_request_info* ri = mg_get_request_info(conn);
  const char* method = ri != nullptr && ri->request_method != nullptr ? ri->request_method : "";
  *head = std::strcmp(method, "HEAD") == 0;
  if (*head || std::strcmp(method, "GET") == 0) return true;
  Reply(conn, 405, "Method Not Allowed", "text/plain; charset=utf-8", "GET or HEAD only\n", false,
        "Allow: GET, HEAD\r\n");
  return false;
}

// Opens and closes a connection to host:port without waiting for it (loopback: at once).
void Poke(const std::string& host, int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  if (fd < 0) return;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, host == "0.0.0.0" ? "127.0.0.1" : host.c_str(), &addr.sin_addr);
  connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  close(fd);
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

int MetricsServer::LogMessage(const mg_connection* conn, const char* message) {
  auto* self = static_cast<MetricsServer*>(mg_get_user_data(mg_get_context(conn)));
  if (self != nullptr && self->starting_.load()) {
    std::lock_guard lock(self->log_mu_);
    self->start_log_ += (self->start_log_.empty() ? "" : "; ") + std::string(message);
  } else {
    // Per-connection trouble (a client that timed out or went away): not the operator's news.
    spdlog::debug("metrics endpoint: {}", message);
  }
  return 1;  // handled: civetweb writes no log file of its own
}

Status MetricsServer::Start(const std::string& host_port) {
  std::string host;
  int port = 0;
  if (!ParseListenAddress(host_port, &host, &port)) {
    return Error::Invalid("'" + host_port + "' is not IPv4-address:port (e.g. 0.0.0.0:9464)");
  }
  if (!library_) {
    mg_init_library(0);
    library_ = true;
  }
  const std::string workers = std::to_string(kWorkers);
  const std::string queue = std::to_string(kQueue);
  const std::string backlog = std::to_string(kBacklog);
  const std::string timeout = std::to_string(kRequestTimeoutMs);
  const char* options[] = {"listening_ports",
                           host_port.c_str(),
                           "num_threads",
                           workers.c_str(),
                           "connection_queue",
                           queue.c_str(),
                           "listen_backlog",
                           backlog.c_str(),
                           "request_timeout_ms",
                           timeout.c_str(),
                           "enable_keep_alive",
                           "no",
                           "max_request_size",
                           "8192",
                           nullptr};
  mg_callbacks callbacks{};
  callbacks.log_message = &MetricsServer::LogMessage;
  char error_text[256] = {0};
  mg_error_data error{nullptr, error_text, sizeof(error_text)};
  mg_init_data init{&callbacks, this, options};
  starting_ = true;
  ctx_ = mg_start2(&init, &error);
  starting_ = false;
  if (ctx_ == nullptr) {
    std::lock_guard lock(log_mu_);
    std::string why = start_log_.empty() ? error_text : start_log_;
    return Error::Permanent("cannot serve /metrics and /healthz on " + host_port + ": " + why +
                            (why.find("in use") != std::string::npos
                                 ? " (another process, perhaps a second instance, has it)"
                                 : ""));
  }
  mg_set_request_handler(ctx_, "/metrics$", &MetricsServer::HandleMetrics, this);
  mg_set_request_handler(ctx_, "/healthz$", &MetricsServer::HandleHealth, this);
  mg_server_port ports[1];
  port_ = mg_get_server_ports(ctx_, 1, ports) == 1 ? ports[0].port : port;
  host_ = host;
  return Status::Ok();
}

int MetricsServer::HandleMetrics(mg_connection* conn, void* cbdata) {
  auto* self = static_cast<MetricsServer*>(cbdata);
  bool head = false;
  if (!ReadOnly(conn, &head)) return 405;
  // No exception may cross into civetweb's C code.
  try {
    Reply(conn, 200, "OK", "text/plain; version=0.0.4; charset=utf-8", self->registry_.Expose(),
          head);
    return 200;
  } catch (const std::exception& e) {
    spdlog::error("/metrics: {}", e.what());
    Reply(conn, 500, "Internal Server Error", "text/plain; charset=utf-8", "internal error\n",
          head);
    return 500;
  }
}

int MetricsServer::HandleHealth(mg_connection* conn, void* cbdata) {
  auto* self = static_cast<MetricsServer*>(cbdata);
  bool head = false;
  if (!ReadOnly(conn, &head)) return 405;
  try {
    Health h = self->health_ ? self->health_() : Health{};
    int status = h.ok ? 200 : 503;
    Reply(conn, status, h.ok ? "OK" : "Service Unavailable", "text/plain; charset=utf-8",
          (h.ok ? "ok\n" : "unhealthy\n") + h.detail, head);
    return status;
  } catch (const std::exception& e) {
    spdlog::error("/healthz: {}", e.what());
    Reply(conn, 500, "Internal Server Error", "text/plain; charset=utf-8", "internal error\n",
          head);
    return 500;
  }
}

void MetricsServer::Stop() {
  if (ctx_ != nullptr) {
    // civetweb's listener looks at its stop flag between polls of 2 s (SOCKET_TIMEOUT_QUANTUM,
    // fixed when Debian built it), so mg_stop() would take up to 2 s of a SIGTERM's budget. A
    // connection wakes the poll: keep making them until mg_stop() has joined civetweb's threads.
    std::atomic<bool> stopped{false};
    std::thread waker([this, &stopped] {
      while (!stopped) {
        Poke(host_, port_);
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    });
    mg_stop(ctx_);
    stopped = true;
    waker.join();
    ctx_ = nullptr;
  }
  if (library_) {
    mg_exit_library();
    library_ = false;
  }
}

}  // namespace common
