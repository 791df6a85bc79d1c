// Concurrent HTTP requests over one libcurl multi handle, with keep-alive connections.
//
// Adapter: the only replayer file that includes libcurl. It drives curl's socket interface from
// its own epoll set, so the cost of a completion does not grow with the number of transfers.
// Ownership: the pool owns every easy handle and its buffers until the response is returned.
// Thread-safety: Submit() and Poll() are called from one thread (the engine's); Wakeup() may be
// called from any thread to end a Poll() early (many calls before the Poll() notices cost one
// write).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace replayer {

struct HttpRequest {
  uint64_t tag = 0;  // the caller's id, returned with the response
  std::string url;
  bool post = false;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  std::chrono::milliseconds timeout{10'000};
};

struct HttpResponse {
  uint64_t tag = 0;
  int status = 0;      // 0: no HTTP answer (connection refused, timeout...), see error
  std::string body;    // at most 64 KiB kept
  std::string error;   // libcurl's message when status == 0
  double seconds = 0;  // from submit to the last byte
};

class HttpPool {
 public:
  HttpPool();
  ~HttpPool();
  HttpPool(const HttpPool&) = delete;
  HttpPool& operator=(const HttpPool&) = delete;

  void Submit(HttpRequest request);
  // Runs transfers until one finishes, Wakeup() is called or timeout passes; returns what
  // finished.
  std::vector<HttpResponse> Poll(std::chrono::milliseconds timeout);
  void Wakeup();
  size_t in_flight() const { return in_flight_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  size_t in_flight_ = 0;
};

}  // namespace replayer
