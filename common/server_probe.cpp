#include "common/server_probe.h"

#include <netdb.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/log.h"
#include "common/unique_fd.h"

namespace common {

namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kMaxInfoBytes = 64 * 1024;

int RemainingMs(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() > 0 ? static_cast<int>(left.count()) : 0;
}

// Connects to one address, non-blocking, within the deadline: the fd or -1.
UniqueFd ConnectOne(const addrinfo* ai, Clock::time_point deadline) {
  UniqueFd fd(
      socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol));
  if (!fd) return fd;
  if (connect(fd.get(), ai->ai_addr, ai->ai_addrlen) != 0) {
    if (errno != EINPROGRESS) return UniqueFd();
    pollfd p{fd.get(), POLLOUT, 0};
    if (poll(&p, 1, RemainingMs(deadline)) != 1) return UniqueFd();
    int err = 0;
    socklen_t len = sizeof(err);
    if (getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) return UniqueFd();
  }
  return fd;
}

// The first line the server sends (without its CR LF), or an error.
Result<std::string> ReadFirstLine(const std::string& url, std::chrono::milliseconds timeout) {
  auto ep = server_version::EndpointOf(url);
  if (!ep) return Error::Permanent("cannot tell the host and port of '" + url + "'");
  const auto deadline = Clock::now() + timeout;
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (int rc = getaddrinfo(ep->host.c_str(), ep->port.c_str(), &hints, &res); rc != 0) {
    return Error::Retryable("cannot resolve " + ep->host + ": " + gai_strerror(rc));
  }
  UniqueFd fd;
  for (const addrinfo* ai = res; ai != nullptr && !fd; ai = ai->ai_next) {
    fd = ConnectOne(ai, deadline);
  }
  freeaddrinfo(res);
  if (!fd) return Error::Retryable("cannot connect to " + url + " to read its INFO");
  std::string got;
  char buf[4096];
  while (got.find("\r\n") == std::string::npos) {
    if (got.size() > kMaxInfoBytes) return Error::Permanent(url + " sent no INFO line");
    pollfd p{fd.get(), POLLIN, 0};
    if (poll(&p, 1, RemainingMs(deadline)) != 1) {
      return Error::Retryable(url + " sent no INFO line within " + std::to_string(timeout.count()) +
                              " ms");
    }
    const ssize_t n = read(fd.get(), buf, sizeof(buf));
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n <= 0) return Error::Retryable(url + " closed the connection before its INFO line");
    got.append(buf, static_cast<size_t>(n));
  }
  return got.substr(0, got.find("\r\n"));
}

}  // namespace

Result<server_version::Version> ConnectedServerVersion(const NatsClient& client,
                                                       std::chrono::milliseconds timeout) {
  const std::string url = client.ConnectedUrl();
  auto line = ReadFirstLine(url, timeout);
  if (!line) return line.error().Retold("reading the nats-server version: " + line.error().message);
  auto text = server_version::FromInfoLine(*line);
  if (!text) {
    return Error::Permanent("reading the nats-server version: the INFO of " + url +
                            " names no version");
  }
  auto v = server_version::Parse(*text);
  if (!v) {
    return Error::Permanent("reading the nats-server version: " + url + " says it is \"" +
                            log::Escaped(*text) + "\", which is no version number");
  }
  return *v;
}

void LogServerVersion(const NatsClient& client, const std::string& name) {
  auto v = ConnectedServerVersion(client, std::chrono::milliseconds(client.request_timeout_ms()));
  if (!v) {
    spdlog::warn("{}: {}", name, v.error().message);
    return;
  }
  if (!server_version::Supported(*v)) {
    spdlog::warn(
        "{}: nats-server {} at {} is older than {}, the oldest this release supports "
        "({}); running on it anyway, untested",
        name, v->text, client.ConnectedUrl(), server_version::kMinText,
        server_version::kRangeStatedIn);
    return;
  }
  spdlog::info("{}: connected to nats-server {} at {}", name, v->text, client.ConnectedUrl());
}

}  // namespace common
