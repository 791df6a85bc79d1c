// Test support: a cpp-httplib server on 127.0.0.1 (a free port) answering every GET and POST
// with one handler, on a thread of its own; the stand-ins and proxies of the tests use it.
// Ownership: owns the server and its thread; the destructor stops and joins them. The handler
// runs on the server's threads: it must guard what it shares.
#pragma once

#include <httplib.h>

#include <string>
#include <thread>

#include "tests/support/recording_proxy.h"

namespace testsupport {

class BackgroundServer {
 public:
  // Listening when it returns; throws std::runtime_error when it cannot bind.
  BackgroundServer(const httplib::Server::Handler& handler, const std::string& what);
  ~BackgroundServer();
  BackgroundServer(const BackgroundServer&) = delete;
  BackgroundServer& operator=(const BackgroundServer&) = delete;

  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
};

// What a test records of a request: method, path, body, the cache token and user agent.
RecordedRequest Record(const httplib::Request& req);

}  // namespace testsupport
