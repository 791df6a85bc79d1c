#include "tests/support/http_background.h"

#include <chrono>
#include <stdexcept>

namespace testsupport {

BackgroundServer::BackgroundServer(const httplib::Server::Handler& handler,
                                   const std::string& what) {
  server_.Post(".*", handler);
  server_.Get(".*", handler);
  server_.set_tcp_nodelay(true);  // else Nagle delays every answer (docs/measured.md)
  port_ = server_.bind_to_any_port("127.0.0.1");
  if (port_ <= 0) throw std::runtime_error(what + ": cannot bind");
  thread_ = std::thread([this] { server_.listen_after_bind(); });
  // is_running() is httplib's readiness signal (0.11 has no blocking wait for it); until it is
  // true, stop() would not end the listen loop. The socket already listens: clients may connect.
  while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

BackgroundServer::~BackgroundServer() {
  server_.stop();
  if (thread_.joinable()) thread_.join();
}

RecordedRequest Record(const httplib::Request& req) {
  RecordedRequest r;
  r.method = req.method;
  r.path = req.path;
  r.body = req.body;
  r.cache_token = req.get_header_value("x-umami-cache");
  r.user_agent = req.get_header_value("User-Agent");
  r.remote_addr = req.remote_addr;
  return r;
}

}  // namespace testsupport
