// The event loop under common::MetricsServer (common/http_server.h): HTTP/1.1 on non-blocking
// sockets, one epoll thread for every connection, one more thread for the expositions.
//
// Each connection has limits.request_timeout_ms from its accept to send its whole request head
// (at most limits.max_head_bytes, else 431), then as long again to take its whole answer; a
// /metrics request waits up to limits.scrape_timeout_ms for its exposition first. At the
// deadline the connection is closed: progress does not extend it. One request per connection.
// At limits.max_connections open, a new one closes the one nearest its deadline.
//
// Ownership: the Loop owns the listening socket, the epoll and wake descriptors, every
// connection and both threads; destroying it stops and joins them (the scrape thread after the
// exposition it runs, if any) and closes everything.
// Threads: the constructor and destructor are called from one owning thread. handlers.health
// runs on the event thread (it must be quick: every connection waits while it runs);
// handlers.scrape runs on the scrape thread, one call at a time, and /metrics requests that
// arrive during a call share the next one.
#pragma once

#include <sys/epoll.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/http_request.h"
#include "common/unique_fd.h"

namespace common::http {

struct Limits {
  size_t max_connections = 4096;
  int request_timeout_ms = 3000;
  size_t max_head_bytes = 8192;
  int scrape_timeout_ms = 30000;
};

struct Handlers {
  // The whole answer to GET (or HEAD) /healthz.
  std::function<std::string(bool head_only)> health;
  // The body of /metrics, or nullopt when it cannot be had (answered 500).
  std::function<std::optional<std::string>()> scrape;
};

class Loop {
 public:
  // listener: bound, listening, non-blocking. epoll: empty. wake: a non-blocking eventfd.
  Loop(UniqueFd listener, UniqueFd epoll, UniqueFd wake, Limits limits, Handlers handlers);
  ~Loop();
  Loop(const Loop&) = delete;
  Loop& operator=(const Loop&) = delete;

 private:
  using Clock = std::chrono::steady_clock;
  using AnswerPtr = std::shared_ptr<const std::string>;  // one exposition's, shared by its waiters
  enum class State {
    kReading,    // until the request head is whole (or its deadline)
    kScraping,   // a /metrics request waits for the scrape thread
    kWriting,    // the answer is being sent
    kLingering,  // answer sent and our side shut: read until the client closes
  };
  struct Conn {
    UniqueFd fd;
    uint64_t id = 0;  // never reused: an event for a closed connection finds nothing
    State state = State::kReading;
    bool head_only = false;
    uint32_t watching = EPOLLIN;
    std::string in;  // the request head so far
    AnswerPtr out;
    size_t sent = 0;
    Clock::time_point deadline;
  };

  // Event thread.
  void Run();
  void Accept();
  void PauseListener(bool paused);
  void OnEvent(uint64_t id, uint32_t events);
  void Read(Conn& c);
  void Dispatch(Conn& c, Request r);
  void Reply(Conn& c, AnswerPtr out);
  void Write(Conn& c);
  void Linger(Conn& c);
  void StartScrape();
  void OnWake();
  void Close(uint64_t id);
  void SetDeadline(Conn& c, Clock::time_point t);
  void Watch(Conn& c, uint32_t events);
  int TimeoutMs(Clock::time_point now) const;
  // Scrape thread.
  void Scrape();
  // Any thread.
  void Wake();

  const UniqueFd listener_;
  const UniqueFd epoll_;
  const UniqueFd wake_;  // eventfd: the destructor and the scrape thread wake the event thread
  const Limits limits_;
  const Handlers handlers_;
  std::atomic<bool> stop_{false};

  // Event thread only.
  std::unordered_map<uint64_t, Conn> conns_;
  std::set<std::pair<Clock::time_point, uint64_t>> deadlines_;  // one per connection
  uint64_t next_id_;
  bool listener_paused_ = false;
  Clock::time_point resume_listener_;
  bool scraping_ = false;               // the scrape thread works for waiters_
  std::vector<uint64_t> waiters_;       // answered by the exposition that runs
  std::vector<uint64_t> next_waiters_;  // came after it started: answered by the next one

  std::mutex mu_;  // guards the five below, shared with the scrape thread
  std::condition_variable cv_;
  bool scrape_wanted_ = false;
  bool scrape_stop_ = false;
  bool scrape_done_ = false;
  std::optional<std::string> scrape_result_;  // nullopt: the scrape handler had none

  std::thread event_thread_;
  std::thread scrape_thread_;
};

}  // namespace common::http
