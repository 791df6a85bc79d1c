// Test support for the integration tests: a nats-server of the test's own, started from a
// configuration text (TLS, JetStream), which a test can pause (SIGSTOP: the kernel still
// accepts connections, the server never answers, as a blackholed address does) and resume.
// Not thread-safe: use from the test's main thread.
#pragma once

#include <memory>
#include <string>

#include "tests/support/test_stack.h"

namespace testsupport {

class NatsServerProcess {
 public:
  // `config`: nats-server configuration without `listen`; it listens on 127.0.0.1:port().
  // `binary`: the nats-server to run ("": NatsServerBin()).
  // Throws std::runtime_error when the server does not accept connections within 10 s.
  NatsServerProcess(const std::string& dir, const std::string& name, const std::string& config,
                    const std::string& binary = "");
  ~NatsServerProcess();  // resumes a paused server before it is killed
  NatsServerProcess(const NatsServerProcess&) = delete;
  NatsServerProcess& operator=(const NatsServerProcess&) = delete;

  int port() const { return port_; }
  std::string log_path() const { return log_; }
  void Pause();
  void Resume();

 private:
  int port_ = 0;
  std::string log_;
  bool paused_ = false;
  std::unique_ptr<ChildProcess> process_;
};

// A port on 127.0.0.1 that refuses every connection for this object's lifetime: bound, never
// listening, so no other process can take it meanwhile.
class ClosedPort {
 public:
  ClosedPort();
  ~ClosedPort();
  ClosedPort(const ClosedPort&) = delete;
  ClosedPort& operator=(const ClosedPort&) = delete;
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// True when something accepts TCP connections on 127.0.0.1:port.
bool Accepts(int port);
// A fresh directory under /tmp, removed by the destructor.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace testsupport
