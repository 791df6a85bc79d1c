// Test support: an HTTP proxy between the replayer and a real Umami that records what the
// replayer put on the wire (paths and the headers that matter), so a test can show what was sent.
// Ownership: owns its server thread. Thread-safety: Requests() may be called from any thread.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace testsupport {

struct RecordedRequest {
  std::string method, path, body;
  std::string cache_token;  // x-umami-cache, empty when absent
  std::string user_agent;
  int status = 0;           // what Umami answered
  std::string remote_addr;  // who sent it (the partition tests tell instances by address)
  int64_t start_ns = 0;     // wall clock (system_clock) when it arrived and when it was answered
  int64_t end_ns = 0;
};

class RecordingProxy {
 public:
  // Listens on 127.0.0.1 (a free port) and forwards to `upstream` (http://host:port).
  explicit RecordingProxy(const std::string& upstream);
  ~RecordingProxy();
  RecordingProxy(const RecordingProxy&) = delete;
  RecordingProxy& operator=(const RecordingProxy&) = delete;

  std::string url() const;
  std::vector<RecordedRequest> Requests() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace testsupport
