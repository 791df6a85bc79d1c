// Concurrent HTTP requests with keep-alive connections, answered through one Poll() loop.
//
// Adapter: owns one epoll set that both transports (http_transport.h) use: a hand-written
// HTTP/1.1 client for http:// (http_raw.h) and libcurl for https:// (http_curl.h; for http://
// too with HttpClient::kCurl). A request whose URL or headers hold a control character is never
// sent by either (http_check.h): it is answered with status 0 and an error naming the header.
// Ownership: the pool owns every request until its response is returned.
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

namespace common {
class ConfigReader;
}

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

// Which client carries http:// URLs; https:// always goes through libcurl.
enum class HttpClient { kRaw, kCurl };

struct HttpPoolOptions {
  HttpClient http_client = HttpClient::kRaw;
  // PEM file of the CAs that https:// servers are verified against, instead of the system's
  // store (a private CA; the tests' own). Empty: the system's.
  std::string ca_file;
};

// The pool's settings from the environment: REPLAYER_HTTP_CLIENT (a benchmark and diagnostic
// knob: "raw", the default, or "curl") and UMAMI_CA_FILE (a readable PEM file; unset: the
// system's CAs). Bad values are reported through `reader`.
HttpPoolOptions ReadHttpPoolOptions(common::ConfigReader& reader);

class HttpPool {
 public:
  // ReadHttpPoolOptions() of the process environment. Throws common::ConfigError on a bad value
  // (RunService reads them first, with the other variables, so it never does there).
  HttpPool();
  explicit HttpPool(HttpPoolOptions options);
  ~HttpPool();
  HttpPool(const HttpPool&) = delete;
  HttpPool& operator=(const HttpPool&) = delete;

  void Submit(HttpRequest request);
  // Runs transfers until one finishes, Wakeup() is called or timeout passes; appends what
  // finished to `done` (the engine keeps one vector for every Poll: no allocation per call).
  void Poll(std::chrono::milliseconds timeout, std::vector<HttpResponse>& done);
  std::vector<HttpResponse> Poll(std::chrono::milliseconds timeout) {
    std::vector<HttpResponse> done;
    Poll(timeout, done);
    return done;
  }
  void Wakeup();
  size_t in_flight() const { return in_flight_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  size_t in_flight_ = 0;
};

}  // namespace replayer
