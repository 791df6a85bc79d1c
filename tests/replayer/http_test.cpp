// The replayer's HTTP client: the response parser on its own, then the pool against scripted
// servers on loopback sockets (keep-alive reuse, a stale keep-alive connection, chunked bodies,
// refused connections, timeouts, wakeups).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "replayer/http_parse.h"
#include "replayer/http_pool.h"

using namespace replayer;
using State = HttpResponseParser::State;
using namespace std::chrono_literals;

TEST_CASE("http parser: a Content-Length response fed byte by byte", "[http]") {
  std::string wire =
      "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello";
  HttpResponseParser p;
  for (size_t i = 0; i + 1 < wire.size(); ++i) REQUIRE(p.Feed(wire.substr(i, 1)) == State::kMore);
  REQUIRE(p.Feed(wire.substr(wire.size() - 1)) == State::kDone);
  CHECK(p.status() == 200);
  CHECK(p.body() == "hello");
  CHECK(p.keep_alive());
}

TEST_CASE("http parser: chunked body with extensions and trailers", "[http]") {
  HttpResponseParser p;
  REQUIRE(p.Feed("HTTP/1.1 400 Bad Request\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nWebsi") ==
          State::kMore);
  REQUIRE(p.Feed("\r\n0D\r\nte not found.\r\n") == State::kMore);
  REQUIRE(p.Feed("0\r\nX-Trailer: 1\r\n\r\n") == State::kDone);
  CHECK(p.status() == 400);
  CHECK(p.body() == "Website not found.");
  CHECK(p.keep_alive());
}

TEST_CASE("http parser: connection handling and framing", "[http]") {
  HttpResponseParser p;
  REQUIRE(p.Feed("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok") ==
          State::kDone);
  CHECK_FALSE(p.keep_alive());

  p.Reset();
  REQUIRE(p.Feed("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n") == State::kDone);
  CHECK_FALSE(p.keep_alive());

  p.Reset();  // no length: the body runs to the close
  REQUIRE(p.Feed("HTTP/1.1 500 Internal Server Error\r\n\r\nboom") == State::kMore);
  REQUIRE(p.Finish() == State::kDone);
  CHECK(p.status() == 500);
  CHECK(p.body() == "boom");
  CHECK_FALSE(p.keep_alive());

  p.Reset();  // an interim 100 before the final answer
  REQUIRE(p.Feed("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n") == State::kDone);
  CHECK(p.status() == 204);
  CHECK(p.body().empty());

  p.Reset();  // bytes after the response: the connection is not reused
  REQUIRE(p.Feed("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nxEXTRA") == State::kDone);
  CHECK(p.leftover() == 5);
  CHECK_FALSE(p.keep_alive());
}

TEST_CASE("http parser: errors", "[http]") {
  HttpResponseParser p;
  CHECK(p.Finish() == State::kError);
  CHECK_FALSE(p.started());
  p.Reset();
  CHECK(p.Feed("SSH-2.0-OpenSSH\r\n\r\n") == State::kError);
  p.Reset();
  REQUIRE(p.Feed("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc") == State::kMore);
  CHECK(p.Finish() == State::kError);
  CHECK(p.started());
  p.Reset();
  CHECK(p.Feed("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n") == State::kError);
  p.Reset();
  CHECK(p.Feed("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n") ==
        State::kError);
}

TEST_CASE("http parser: keeps at most max_body bytes of a body", "[http]") {
  HttpResponseParser p(4);
  REQUIRE(p.Feed("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789") == State::kDone);
  CHECK(p.body() == "0123");
  CHECK(p.keep_alive());
}

namespace {

// A loopback server that runs `script(connection index, request index, request)` for each
// request and writes what it returns; an empty return closes the connection unanswered.
class ScriptedServer {
 public:
  using Script = std::function<std::string(int conn, int req, const std::string& request)>;
  explicit ScriptedServer(Script script) : script_(std::move(script)) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    socklen_t len = sizeof a;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    listen(fd_, 16);
    thread_ = std::thread([this] { Accept(); });
  }
  ~ScriptedServer() {
    stop_ = true;
    shutdown(fd_, SHUT_RDWR);
    close(fd_);
    thread_.join();
    for (auto& t : workers_) t.join();
  }
  std::string url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }
  int connections() const { return connections_.load(); }

 private:
  void Accept() {
    while (!stop_) {
      int c = accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      int index = connections_++;
      std::lock_guard lock(mu_);
      workers_.emplace_back([this, c, index] { Serve(c, index); });
    }
  }
  void Serve(int c, int conn) {
    std::string buf;
    char tmp[4096];
    for (int req = 0;; ++req) {
      size_t end;
      while ((end = buf.find("\r\n\r\n")) == std::string::npos) {
        ssize_t n = read(c, tmp, sizeof tmp);
        if (n <= 0) {
          close(c);
          return;
        }
        buf.append(tmp, static_cast<size_t>(n));
      }
      size_t length = 0;
      auto at = buf.find("Content-Length: ");
      if (at != std::string::npos && at < end) length = std::stoul(buf.substr(at + 16));
      while (buf.size() < end + 4 + length) {
        ssize_t n = read(c, tmp, sizeof tmp);
        if (n <= 0) break;
        buf.append(tmp, static_cast<size_t>(n));
      }
      std::string request = buf.substr(0, end + 4 + length);
      buf.erase(0, request.size());
      std::string answer = script_(conn, req, request);
      if (answer.empty()) break;
      (void)!send(c, answer.data(), answer.size(), MSG_NOSIGNAL);
    }
    close(c);
  }

  Script script_;
  int fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  std::thread thread_;
  std::mutex mu_;
  std::vector<std::thread> workers_;
};

HttpResponse RunOne(HttpPool& pool, HttpRequest r, std::chrono::milliseconds limit = 5s) {
  pool.Submit(std::move(r));
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    auto done = pool.Poll(100ms);
    if (!done.empty()) return done.front();
  }
  FAIL("no answer in time");
  return {};
}

HttpRequest Post(const std::string& url, uint64_t tag, std::string body = "{\"a\":1}") {
  HttpRequest r;
  r.tag = tag;
  r.url = url;
  r.post = true;
  r.body = std::move(body);
  r.headers.emplace_back("User-Agent", "Mozilla/5.0\r\nX-Injected: 1");
  return r;
}

const char* kOk = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\ntok";

}  // namespace

TEST_CASE("http pool: keep-alive reuse, headers as one line, body and tag", "[http]") {
  std::vector<std::string> seen;
  std::mutex mu;
  ScriptedServer server([&](int, int, const std::string& req) {
    std::lock_guard lock(mu);
    seen.push_back(req);
    return std::string(kOk);
  });
  HttpPool pool;
  for (uint64_t i = 1; i <= 3; ++i) {
    auto r = RunOne(pool, Post(server.url("/api/send"), i));
    CHECK(r.tag == i);
    CHECK(r.status == 200);
    CHECK(r.body == "tok");
  }
  CHECK(server.connections() == 1);
  std::lock_guard lock(mu);
  REQUIRE(seen.size() == 3);
  CHECK(seen[0].rfind("POST /api/send HTTP/1.1\r\n", 0) == 0);
  CHECK(seen[0].find("Content-Length: 7\r\n\r\n{\"a\":1}") != std::string::npos);
  CHECK(seen[0].find("\r\nX-Injected") == std::string::npos);
  CHECK(pool.in_flight() == 0);
}

TEST_CASE("http pool: a stale keep-alive connection is retried once on a new one", "[http]") {
  // Connection 0 answers its first request and then drops the second unanswered, as a server
  // does when its keep-alive timeout closes the connection under a request.
  ScriptedServer server(
      [](int conn, int req, const std::string&) { return conn == 0 && req == 1 ? "" : kOk; });
  HttpPool pool;
  CHECK(RunOne(pool, Post(server.url("/"), 1)).status == 200);
  auto r = RunOne(pool, Post(server.url("/"), 2));
  CHECK(r.status == 200);
  CHECK(server.connections() == 2);
}

TEST_CASE("http pool: a new connection closed without an answer is an error", "[http]") {
  ScriptedServer server([](int, int, const std::string&) { return std::string(); });
  HttpPool pool;
  auto r = RunOne(pool, Post(server.url("/"), 1));
  CHECK(r.status == 0);
  CHECK_THAT(r.error, Catch::Contains("closed before any response"));
  CHECK(server.connections() == 1);
}

TEST_CASE("http pool: chunked answers, GET, and a closing answer", "[http]") {
  ScriptedServer server([](int conn, int req, const std::string& request) -> std::string {
    if (request.rfind("GET /api/heartbeat HTTP/1.1\r\n", 0) != 0) return "HTTP/1.1 400 x\r\n\r\n";
    if (conn == 0 && req == 0)
      return "HTTP/1.1 403 Forbidden\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nnot "
             "\r\n5\r\nfound\r\n0\r\n\r\n";
    return "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok";
  });
  HttpPool pool;
  HttpRequest get;
  get.url = server.url("/api/heartbeat");
  auto r = RunOne(pool, get);
  CHECK(r.status == 403);
  CHECK(r.body == "not found");
  r = RunOne(pool, get);
  CHECK(r.status == 200);
  r = RunOne(pool, get);  // the last answer closed its connection: a new one
  CHECK(r.status == 200);
  CHECK(server.connections() == 2);
}

TEST_CASE("http pool: refused connections and timeouts answer with status 0", "[http]") {
  HttpPool pool;
  int probe = socket(AF_INET, SOCK_STREAM, 0);  // a port with nobody listening
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(probe, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(probe, reinterpret_cast<sockaddr*>(&a), &len);
  close(probe);
  auto r = RunOne(pool, Post("http://127.0.0.1:" + std::to_string(ntohs(a.sin_port)) + "/", 7));
  CHECK(r.tag == 7);
  CHECK(r.status == 0);
  CHECK_THAT(r.error, Catch::Contains("refused"));

  ScriptedServer slow([](int, int, const std::string&) {
    std::this_thread::sleep_for(1500ms);
    return std::string(kOk);
  });
  auto req = Post(slow.url("/"), 8);
  req.timeout = 200ms;
  auto t0 = std::chrono::steady_clock::now();
  r = RunOne(pool, req);
  CHECK(r.status == 0);
  CHECK_THAT(r.error, Catch::Contains("no answer within 200 ms"));
  CHECK(std::chrono::steady_clock::now() - t0 < 1000ms);
  CHECK(pool.in_flight() == 0);
}

TEST_CASE("http pool: Wakeup ends a Poll early, from another thread", "[http]") {
  HttpPool pool;
  auto t0 = std::chrono::steady_clock::now();
  std::thread waker([&] {
    std::this_thread::sleep_for(50ms);
    pool.Wakeup();
  });
  (void)pool.Poll(5000ms);
  waker.join();
  CHECK(std::chrono::steady_clock::now() - t0 < 2000ms);
  // Several wakeups before a Poll end that one Poll and leave nothing behind for the next.
  std::thread([&] {
    pool.Wakeup();
    pool.Wakeup();
  }).join();
  t0 = std::chrono::steady_clock::now();
  (void)pool.Poll(5000ms);
  CHECK(std::chrono::steady_clock::now() - t0 < 2000ms);
  t0 = std::chrono::steady_clock::now();
  (void)pool.Poll(100ms);
  CHECK(std::chrono::steady_clock::now() - t0 >= 90ms);
}
