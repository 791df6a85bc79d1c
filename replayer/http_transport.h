// What the HTTP pool needs of a client: requests in, readiness events from the pool's epoll set,
// timers, responses out. Two implement it: RawHttp (hand-written HTTP/1.1 over TCP, http://
// only) and CurlHttp (libcurl, http:// and https://). Both are kept because the measured cost
// differs: `bench/replayer-bench sink` drains with each in one run; with libcurl the replayer
// spent 1.3 to 2.1 times the CPU per event (92 µs against 58 µs, medians of 5 runs), and its
// drain came out at 0.69 of the built-in client's (0.55 to 0.75; on a machine busier with other
// work, 0.58 to 1.25 in 4 more runs): not within the 25 % that would have let libcurl alone
// carry both schemes. One conformance suite runs against each (tests/replayer/
// http_test.cpp); both apply the same request check (http_check.h) and response-head rules
// (http_parse.h).
//
// Not thread-safe: a transport is used by the pool on the engine thread only. It borrows the
// pool's epoll set and marks its fds with epoll_tag() in the event data (low 32 bits: the fd).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

#include "replayer/http_pool.h"

namespace replayer {

class HttpTransport {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  virtual ~HttpTransport() = default;

  // An answer (or an error with status 0) always follows in TakeDone(), also for a request
  // refused before any byte was sent.
  virtual void Submit(HttpRequest request, TimePoint now) = 0;
  // One epoll event on an fd carrying this transport's tag.
  virtual void OnEvent(int fd, uint32_t events, TimePoint now) = 0;
  // Ends what is due: request timeouts, connection upkeep, timers.
  virtual void Expire(TimePoint now) = 0;
  virtual std::optional<TimePoint> NextDeadline() const = 0;
  // Moves the finished requests' responses to `out`.
  virtual void TakeDone(std::vector<HttpResponse>& out) = 0;
  virtual size_t running() const = 0;
  virtual uint64_t epoll_tag() const = 0;
};

}  // namespace replayer
