#include "tests/replayer/http_test_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <stdexcept>

namespace replayer::testing {

ScriptedServer::ScriptedServer(Script script) : script_(std::move(script)) {
  fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
    throw std::runtime_error("scripted server: bind");
  socklen_t len = sizeof a;
  getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
  port_ = ntohs(a.sin_port);
  listen(fd_, 64);
  thread_ = std::thread([this] { Accept(); });
}

ScriptedServer::~ScriptedServer() {
  stop_ = true;
  shutdown(fd_, SHUT_RDWR);
  thread_.join();
  close(fd_);
  {
    std::lock_guard lock(mu_);
    for (int c : open_) shutdown(c, SHUT_RDWR);
  }
  for (auto& t : workers_) t.join();
}

std::string ScriptedServer::url(const std::string& path) const {
  return "http://127.0.0.1:" + std::to_string(port_) + path;
}

std::vector<std::string> ScriptedServer::requests() const {
  std::lock_guard lock(mu_);
  return requests_;
}

int ScriptedServer::count(const std::string& line_start) const {
  std::lock_guard lock(mu_);
  return static_cast<int>(std::count_if(requests_.begin(), requests_.end(), [&](const auto& r) {
    return r.rfind(line_start, 0) == 0;
  }));
}

void ScriptedServer::Accept() {
  while (!stop_) {
    int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) return;
    int one = 1;
    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    int index = connections_++;
    std::lock_guard lock(mu_);
    open_.push_back(c);
    workers_.emplace_back([this, c, index] { Serve(c, index); });
  }
}

void ScriptedServer::Serve(int c, int conn) {
  std::string buf;
  char tmp[4096];
  auto finish = [&] {
    std::lock_guard lock(mu_);
    open_.erase(std::remove(open_.begin(), open_.end(), c), open_.end());
    close(c);
  };
  for (int req = 0;; ++req) {
    size_t end;
    while ((end = buf.find("\r\n\r\n")) == std::string::npos) {
      ssize_t n = read(c, tmp, sizeof tmp);
      if (n <= 0) return finish();
      buf.append(tmp, static_cast<size_t>(n));
    }
    size_t length = 0;
    auto at = buf.find("\r\nContent-Length: ");
    if (at != std::string::npos && at < end) length = std::stoul(buf.substr(at + 18));
    while (buf.size() < end + 4 + length) {
      ssize_t n = read(c, tmp, sizeof tmp);
      if (n <= 0) break;
      buf.append(tmp, static_cast<size_t>(n));
    }
    std::string request = buf.substr(0, std::min(buf.size(), end + 4 + length));
    buf.erase(0, request.size());
    {
      std::lock_guard lock(mu_);
      requests_.push_back(request);
    }
    Reply reply = script_(conn, req, request);
    if (reply.bytes.empty()) return finish();
    // The stand-in's scripted slowness (a slow Umami is the fault under test), not a wait.
    if (reply.delay.count() > 0) std::this_thread::sleep_for(reply.delay);
    size_t piece = reply.piece == 0 ? reply.bytes.size() : reply.piece;
    for (size_t off = 0; off < reply.bytes.size(); off += piece) {
      if (off > 0 && reply.gap.count() > 0) std::this_thread::sleep_for(reply.gap);
      size_t n = std::min(piece, reply.bytes.size() - off);
      if (send(c, reply.bytes.data() + off, n, MSG_NOSIGNAL) != static_cast<ssize_t>(n))
        return finish();
    }
    if (reply.close) return finish();
  }
}

uint16_t UnusedPort() {
  int probe = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(probe, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(probe, reinterpret_cast<sockaddr*>(&a), &len);
  close(probe);
  return ntohs(a.sin_port);
}

}  // namespace replayer::testing
