// A loopback port that listens and never accepts: an HTTP server that has stalled. Connections
// wait in its backlog and nothing is ever answered (a replayer's sends stay in flight).
// Ownership: owns the socket. Thread-safety: none needed after construction.
#pragma once

#include <string>

namespace testsupport {

class SilentListener {
 public:
  SilentListener();  // on a free port; bound() tells whether it listens
  ~SilentListener();
  SilentListener(const SilentListener&) = delete;
  SilentListener& operator=(const SilentListener&) = delete;
  bool bound() const { return bound_; }
  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  int fd_ = -1;
  int port_ = 0;
  bool bound_ = false;
};

}  // namespace testsupport
