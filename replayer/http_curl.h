// HTTP(S) through one libcurl multi handle, driven by the HTTP pool's epoll set.
//
// libcurl is used the cheap way: one multi handle over curl's socket interface (curl is told
// which socket is ready, so a completion costs its own reads and writes, not a pass over every
// transfer), easy handles reused with their options and buffers, connections kept alive in the
// multi handle's cache (closed after 4 s idle, before Node's 5 s keep-alive timeout), and header
// lists built in storage the handle keeps, so a request allocates nothing once the handles and
// buffers have grown to their working size.
//
// Adapter: the only replayer file that includes libcurl. Ownership: owns the multi handle, the
// easy handles and the requests on them until their responses are taken. Not thread-safe: used
// by the pool on the engine thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "replayer/http_pool.h"
#include "replayer/http_transport.h"

namespace replayer {

class CurlHttp final : public HttpTransport {
 public:
  static constexpr uint64_t kEpollTag = 1ULL << 41;  // marks this client's fds in epoll data

  // Borrows the epoll set. `ca_file`: PEM CAs for https:// (empty: the system's).
  CurlHttp(int epfd, std::string ca_file);
  ~CurlHttp() override;
  CurlHttp(const CurlHttp&) = delete;
  CurlHttp& operator=(const CurlHttp&) = delete;

  // Any http:// or https:// URL. An answer (or error) always follows in TakeDone().
  void Submit(HttpRequest request, TimePoint now) override;
  void OnEvent(int fd, uint32_t events, TimePoint now) override;
  // Runs curl's timer when it is due (timeouts, connection upkeep, transfers just added).
  void Expire(TimePoint now) override;
  std::optional<TimePoint> NextDeadline() const override;
  void TakeDone(std::vector<HttpResponse>& out) override;
  size_t running() const override;
  uint64_t epoll_tag() const override { return kEpollTag; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace replayer
