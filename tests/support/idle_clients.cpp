#include "tests/support/idle_clients.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>

namespace testsupport {

namespace {

sockaddr_in Loopback(int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return addr;
}

// True when fd is closed by its peer, reset or refused (what is readable is drained first).
bool PeerGone(int fd) {
  pollfd p{fd, POLLIN, 0};
  if (poll(&p, 1, 0) != 1) return false;
  if ((p.revents & (POLLERR | POLLHUP)) != 0) return true;
  char buf[512];
  ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

}  // namespace

IdleClients::IdleClients(int port, int count) : port_(port) {
  // The test holds `count` sockets, and on loopback the server as many again.
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < static_cast<rlim_t>(count) + 256) {
    lim.rlim_cur = lim.rlim_max;
    setrlimit(RLIMIT_NOFILE, &lim);
  }
  fds_.reserve(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) fds_.push_back(Dial());
}

IdleClients::~IdleClients() {
  for (int fd : fds_) {
    if (fd >= 0) close(fd);
  }
}

int IdleClients::Dial() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error("idle clients: socket() failed (too many open files?)");
  sockaddr_in addr = Loopback(port_);
  ++opened_;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 && errno != EINPROGRESS) {
    close(fd);
    return -1;
  }
  return fd;
}

int IdleClients::Refresh() {
  int reopened = 0;
  for (int& fd : fds_) {
    if (fd >= 0 && !PeerGone(fd)) continue;
    if (fd >= 0) close(fd);
    fd = Dial();
    ++reopened;
  }
  return reopened;
}

int IdleClients::open() const {
  int n = 0;
  for (int fd : fds_) {
    if (fd >= 0) ++n;
  }
  return n;
}

int HttpGet(int port, const std::string& path, int timeout_ms, std::string* answer) {
  auto t0 = std::chrono::steady_clock::now();
  auto left = [&] {
    return timeout_ms - static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                             std::chrono::steady_clock::now() - t0)
                                             .count());
  };
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr = Loopback(port);
  std::string got;
  bool whole = false;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 || errno == EINPROGRESS) {
    pollfd p{fd, POLLOUT, 0};
    int err = 0;
    socklen_t len = sizeof(err);
    std::string req = "GET " + path + " HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n";
    // The request is small: one send once connected fits the socket buffer.
    if (left() > 0 && poll(&p, 1, left()) == 1 &&
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0 &&
        send(fd, req.data(), req.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(req.size())) {
      char buf[4096];
      while (true) {
        pollfd r{fd, POLLIN, 0};
        if (left() <= 0 || poll(&r, 1, left()) != 1) break;
        ssize_t n = recv(fd, buf, sizeof(buf), 0);
        if (n == 0) whole = true;
        if (n <= 0) break;
        got.append(buf, static_cast<size_t>(n));
      }
    }
  }
  close(fd);
  if (!whole || got.rfind("HTTP/1.", 0) != 0 || got.size() < 12) return -1;
  if (answer != nullptr) *answer = got;
  return std::stoi(got.substr(9, 3));
}

}  // namespace testsupport
