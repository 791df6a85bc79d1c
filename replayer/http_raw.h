// HTTP/1.1 over plain TCP for http:// URLs, driven by the HTTP pool's epoll set.
//
// Why not libcurl for these: libcurl used as cheaply as it allows (http_curl.h) cost the
// replayer 25 to 63 µs more CPU per send in 9 runs of bench/replayer-bench sink, both clients
// in each run (see http_transport.h for the drain rates). That CPU is taken from Umami and NATS
// on the same machine. https:// URLs still go through libcurl.
//
// Adapter: sockets only. Ownership: owns its connections and the requests in flight on them.
// Not thread-safe: used by the pool on the engine thread only. Keep-alive connections are
// reused newest first and closed after 4 s idle, before Node's (Umami's) 5 s keep-alive
// timeout can close them under a request; a request whose reused connection ends before any
// byte of an answer is sent once more on a new connection, as libcurl does.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "replayer/http_pool.h"
#include "replayer/http_transport.h"

namespace replayer {

class RawHttp final : public HttpTransport {
 public:
  static constexpr uint64_t kEpollTag = 1ULL << 40;  // marks this client's fds in epoll data

  explicit RawHttp(int epfd);  // borrows the epoll set
  ~RawHttp() override;
  RawHttp(const RawHttp&) = delete;
  RawHttp& operator=(const RawHttp&) = delete;

  // `request.url` starts with http://. An answer (or error) always follows in TakeDone().
  void Submit(HttpRequest request, TimePoint now) override;
  void OnEvent(int fd, uint32_t events, TimePoint now) override;
  // Ends requests past their timeout and closes connections idle too long.
  void Expire(TimePoint now) override;
  std::optional<TimePoint> NextDeadline() const override;
  // Moves the finished requests' responses to `out`.
  void TakeDone(std::vector<HttpResponse>& out) override;
  size_t running() const override { return running_; }
  uint64_t epoll_tag() const override { return kEpollTag; }

 private:
  struct Origin;
  struct Conn;
  struct Transfer;

  Origin* Target(const std::string& url, std::string& path, std::string& error);
  void Start(std::unique_ptr<Transfer> t, TimePoint now);
  Conn* Connect(Origin& o, std::string& error);
  bool Write(Conn& c, TimePoint now);  // false: the connection failed and is gone
  void Read(Conn& c, TimePoint now);
  // The connection failed: retry on a new one when allowed, else answer with `error`.
  void Failed(Conn& c, std::string error, TimePoint now);  // by value: c dies first
  void Complete(Conn& c, TimePoint now);
  void Answer(Transfer& t, int status, std::string body, std::string error, TimePoint now);
  void Close(Conn& c);
  void SetWantWrite(Conn& c, bool want);
  // The connection's request must end by `due` (its timeout, or the connect timeout first).
  void Arm(Conn& c, TimePoint due);

  // Deadlines of the requests under way, earliest on top (a heap in a vector). An entry whose
  // connection has moved on (answered, closed, re-armed: its `arm` differs) is dropped when it
  // reaches the top, or when stale entries outnumber the live ones (Arm() compacts: without it
  // a 30 s timeout at 12,000 sends/s would keep 360,000 dead entries, 11 MB).
  // A heap instead of a scan of every connection on every Poll: that scan (Expire and
  // NextDeadline) was about 3 % of the replayer's CPU at 128 connections (perf record of
  // bench/replayer-bench sink).
  struct Due {
    TimePoint at;
    int fd;
    uint64_t arm;
    bool operator>(const Due& o) const { return at > o.at; }
  };
  bool Current(const Due& d) const;

  int epfd_;
  std::unordered_map<std::string, std::unique_ptr<Origin>> origins_;          // by "host:port"
  std::unordered_map<std::string, std::pair<Origin*, std::string>> targets_;  // url -> origin, path
  std::unordered_map<int, std::unique_ptr<Conn>> conns_;                      // by fd
  std::vector<HttpResponse> done_;
  std::vector<Due> dues_;  // std::push_heap / pop_heap with std::greater: earliest at front
  uint64_t next_arm_ = 0;
  size_t running_ = 0;
  TimePoint last_sweep_{};
};

}  // namespace replayer
