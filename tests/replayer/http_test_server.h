// A scripted HTTP/1.1 server on a loopback port, for the HTTP client tests: it answers each
// request with bytes the test chooses (at once, in pieces, late, or not at all) and records every
// request it read, so a test can check what reached the wire.
//
// Test support only. Thread-safe: one thread per connection; the accessors lock.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace replayer::testing {

struct Reply {
  Reply() = default;
  Reply(std::string b) : bytes(std::move(b)) {}  // NOLINT: implicit by design
  Reply(const char* b) : bytes(b) {}             // NOLINT: implicit by design

  std::string bytes;                   // empty: the connection is closed unanswered
  size_t piece = 0;                    // write in pieces of this many bytes (0: at once)
  std::chrono::milliseconds gap{0};    // between pieces
  std::chrono::milliseconds delay{0};  // before the first byte
  bool close = false;                  // close the connection after writing
};

class ScriptedServer {
 public:
  // script(connection index, request index on it, the request's bytes)
  using Script = std::function<Reply(int conn, int req, const std::string& request)>;
  explicit ScriptedServer(Script script);
  ~ScriptedServer();
  ScriptedServer(const ScriptedServer&) = delete;
  ScriptedServer& operator=(const ScriptedServer&) = delete;

  std::string url(const std::string& path) const;
  uint16_t port() const { return port_; }
  int connections() const { return connections_.load(); }
  std::vector<std::string> requests() const;  // every request read, in order of arrival
  // How many requests read had this request line start ("GET /smuggled ").
  int count(const std::string& line_start) const;

 private:
  void Accept();
  void Serve(int fd, int conn);

  Script script_;
  int fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  std::thread thread_;
  mutable std::mutex mu_;
  std::vector<std::thread> workers_;
  std::vector<int> open_;  // connection fds still open, shut down by the destructor
  std::vector<std::string> requests_;
};

// A loopback port nobody listens on (bound and closed again).
uint16_t UnusedPort();

}  // namespace replayer::testing
