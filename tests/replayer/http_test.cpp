// The conformance suite of the two HTTP transports (http_transport.h): every case runs through
// the pool once with RawHttp and once with CurlHttp carrying http://, against scripted loopback
// servers: framing (lengths, chunked,
// split reads, a body to the close, 1xx, a close in the middle), strict status lines and header
// fields, the body cap, timeouts, keep-alive reuse, wakeups, and the request-side rule that a
// header with a control character never reaches the wire.
#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "replayer/http_pool.h"
#include "tests/replayer/http_test_server.h"

using namespace replayer;
using replayer::testing::Reply;
using replayer::testing::ScriptedServer;
using namespace std::chrono_literals;

namespace {

const char* Name(HttpClient c) { return c == HttpClient::kRaw ? "raw" : "curl"; }

HttpClient AnyClient() { return GENERATE(HttpClient::kRaw, HttpClient::kCurl); }

HttpPoolOptions For(HttpClient c) {
  HttpPoolOptions o;
  o.http_client = c;
  return o;
}

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
  r.headers.emplace_back("Content-Type", "application/json");
  r.headers.emplace_back("User-Agent", "Mozilla/5.0 (X11; Linux x86_64)");
  return r;
}

HttpRequest Get(const std::string& url) {
  HttpRequest r;
  r.url = url;
  return r;
}

const char* kOk = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\ntok";

// One answer to every request: the status and body the client reports for it.
HttpResponse AnswerWith(HttpClient client, Reply reply) {
  ScriptedServer server([&](int, int, const std::string&) { return reply; });
  HttpPool pool(For(client));
  return RunOne(pool, Get(server.url("/")));
}

}  // namespace

TEST_CASE("http pool: keep-alive reuse, the request as written, body and tag", "[http]") {
  HttpClient client = AnyClient();
  INFO(Name(client));
  ScriptedServer server([](int, int, const std::string&) { return kOk; });
  HttpPool pool(For(client));
  for (uint64_t i = 1; i <= 3; ++i) {
    auto r = RunOne(pool, Post(server.url("/api/send"), i));
    CHECK(r.tag == i);
    CHECK(r.status == 200);
    CHECK(r.body == "tok");
    CHECK(r.error.empty());
    CHECK(r.seconds > 0);
  }
  CHECK(server.connections() == 1);
  auto seen = server.requests();
  REQUIRE(seen.size() == 3);
  const std::string& w = seen[0];
  CHECK(w.rfind("POST /api/send HTTP/1.1\r\n", 0) == 0);
  CHECK(w.find("\r\nHost: 127.0.0.1:" + std::to_string(server.port()) + "\r\n") !=
        std::string::npos);
  CHECK(w.find("\r\nContent-Type: application/json\r\n") != std::string::npos);
  CHECK(w.find("\r\nUser-Agent: Mozilla/5.0 (X11; Linux x86_64)\r\n") != std::string::npos);
  CHECK(w.find("\r\nContent-Length: 7\r\n") != std::string::npos);
  // The same header fields from both clients, nothing of their own but Host and Content-Length.
  std::vector<std::string> names;
  for (size_t at = w.find("\r\n") + 2; at < w.size();) {
    size_t eol = w.find("\r\n", at);
    if (eol == at) break;
    names.push_back(w.substr(at, w.find(':', at) - at));
    at = eol + 2;
  }
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"Content-Length", "Content-Type", "Host", "User-Agent"});
  CHECK(w.substr(w.size() - 11) == "\r\n\r\n{\"a\":1}");
  CHECK(pool.in_flight() == 0);
}

TEST_CASE("http pool: a header value with a control character never reaches the wire", "[http]") {
  HttpClient client = AnyClient();
  INFO(Name(client));
  ScriptedServer server([](int, int, const std::string&) { return kOk; });
  HttpPool pool(For(client));
  const std::vector<std::string> bad = {
      "Mozilla/5.0\r\nContent-Length: 0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n",
      "Mozilla/5.0\nX-Injected: 1",
      "Mozilla/5.0\rX-Injected: 1",
      std::string("Mozilla/5.0\0X-Injected: 1", 25),
      "Mozilla\x01/5.0",
      "Mozilla\x1f/5.0",
      "Mozilla\x7f/5.0",
  };
  uint64_t tag = 0;
  for (const auto& v : bad) {
    for (const char* header : {"User-Agent", "X-Forwarded-For", "x-umami-cache"}) {
      auto req = Post(server.url("/api/send"), ++tag);
      req.headers.emplace_back(header, v);
      auto r = RunOne(pool, req);
      CHECK(r.tag == tag);
      CHECK(r.status == 0);
      CHECK_THAT(r.error,
                 Catch::Contains(std::string("header ") + header + " holds a control character"));
    }
  }
  CHECK(server.requests().empty());
  CHECK(server.connections() == 0);
  // A tab is legal and goes as it is; so do bytes above 0x7f; an empty value stays a header.
  auto req = Post(server.url("/api/send"), 99);
  req.headers.emplace_back("X-Tab", "a\tb");
  req.headers.emplace_back("X-Utf8", "caf\xc3\xa9");
  req.headers.emplace_back("x-umami-cache", "");
  auto r = RunOne(pool, req);
  CHECK(r.status == 200);
  auto seen = server.requests();
  REQUIRE(seen.size() == 1);
  CHECK(seen[0].find("\r\nX-Tab: a\tb\r\n") != std::string::npos);
  CHECK(seen[0].find("\r\nX-Utf8: caf\xc3\xa9\r\n") != std::string::npos);
  CHECK(seen[0].find("\r\nx-umami-cache:") != std::string::npos);
  CHECK(server.count("GET /smuggled") == 0);
  CHECK(pool.in_flight() == 0);
}

TEST_CASE("http pool: a stale keep-alive connection is retried once on a new one", "[http]") {
  HttpClient client = AnyClient();
  INFO(Name(client));
  // Connection 0 answers its first request and then drops the second unanswered, as a server
  // does when its keep-alive timeout closes the connection under a request.
  ScriptedServer server([](int conn, int req, const std::string&) -> Reply {
    return conn == 0 && req == 1 ? "" : kOk;
  });
  HttpPool pool(For(client));
  CHECK(RunOne(pool, Post(server.url("/"), 1)).status == 200);
  auto r = RunOne(pool, Post(server.url("/"), 2));
  CHECK(r.status == 200);
  CHECK(server.connections() == 2);
}

TEST_CASE("http pool: a new connection closed without an answer is an error", "[http]") {
  HttpClient client = AnyClient();
  INFO(Name(client));
  ScriptedServer server([](int, int, const std::string&) { return Reply(); });
  HttpPool pool(For(client));
  auto r = RunOne(pool, Post(server.url("/"), 1));
  CHECK(r.status == 0);
  CHECK_FALSE(r.error.empty());
  CHECK(server.connections() == 1);  // not sent again: it may have been processed
}

TEST_CASE("http pool: chunked answers, GET, a closing answer, a body to the close", "[http]") {
  HttpClient client = AnyClient();
  INFO(Name(client));
  ScriptedServer server([](int conn, int req, const std::string& request) -> Reply {
    if (request.rfind("GET /api/heartbeat HTTP/1.1\r\n", 0) != 0) return "HTTP/1.1 400 x\r\n\r\n";
    if (conn == 0 && req == 0)
      return "HTTP/1.1 403 Forbidden\r\nTransfer-Encoding: chunked\r\n\r\n4;ext=1\r\nnot "
             "\r\n5\r\nfound\r\n0\r\nX-Trailer: 1\r\n\r\n";
    if (conn == 0) return "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok";
    Reply to_close("HTTP/1.1 500 Internal Server Error\r\n\r\nboom");
    to_close.close = true;
    return to_close;
  });
  HttpPool pool(For(client));
  auto r = RunOne(pool, Get(server.url("/api/heartbeat")));
  CHECK(r.status == 403);
  CHECK(r.body == "not found");
  r = RunOne(pool, Get(server.url("/api/heartbeat")));
  CHECK(r.status == 200);
  CHECK(r.body == "ok");
  r = RunOne(pool, Get(server.url("/api/heartbeat")));  // the last one closed: a new connection
  CHECK(r.status == 500);
  CHECK(r.body == "boom");
  CHECK(server.connections() == 2);
}

TEST_CASE("http pool: answers split into small reads", "[http]") {
  HttpClient client = AnyClient();
  INFO(Name(client));
  for (size_t piece : {1, 3, 7}) {
    Reply fixed(
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 11\r\n\r\nhello world");
    fixed.piece = piece;
    fixed.gap = 1ms;
    auto r = AnswerWith(client, fixed);
    CHECK(r.status == 200);
    CHECK(r.body == "hello world");
    Reply chunked(
        "HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n"
        "5\r\nhello\r\n1\r\n \r\n5\r\nworld\r\n0\r\n\r\n");
    chunked.piece = piece;
    chunked.gap = 1ms;
    r = AnswerWith(client, chunked);
    CHECK(r.status == 201);
    CHECK(r.body == "hello world");
  }
}

TEST_CASE("http pool: interim 1xx answers before the final one", "[http]") {
  HttpClient client = AnyClient();
  INFO(Name(client));
  auto r = AnswerWith(client,
                      "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
                      "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
  CHECK(r.status == 200);
  CHECK(r.body == "ok");
  r = AnswerWith(client, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n");
  CHECK(r.status == 0);
  CHECK_THAT(r.error, Catch::Contains("101"));
}

TEST_CASE("http pool: the body cap keeps 64 KiB and the connection stays usable", "[http]") {
  HttpClient client = AnyClient();
  INFO(Name(client));
  std::string big(100 * 1024, 'x');
  ScriptedServer server([&](int, int req, const std::string&) -> Reply {
    if (req == 0)
      return "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(big.size()) + "\r\n\r\n" + big;
    return kOk;
  });
  HttpPool pool(For(client));
  auto r = RunOne(pool, Get(server.url("/")));
  CHECK(r.status == 200);
  CHECK(r.body.size() == 64 * 1024);
  r = RunOne(pool, Get(server.url("/")));
  CHECK(r.status == 200);
  CHECK(r.body == "tok");
  CHECK(server.connections() == 1);
}

TEST_CASE("http pool: a close in the middle of a body is an error", "[http]") {
  HttpClient client = AnyClient();
  INFO(Name(client));
  Reply fixed("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc");
  fixed.close = true;
  auto r = AnswerWith(client, fixed);
  CHECK(r.status == 0);
  CHECK_FALSE(r.error.empty());
  Reply chunked("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab");
  chunked.close = true;
  r = AnswerWith(client, chunked);
  CHECK(r.status == 0);
  Reply head_only("HTTP/1.1 200 OK\r\nContent-Le");
  head_only.close = true;
  r = AnswerWith(client, head_only);
  CHECK(r.status == 0);
}

TEST_CASE("http pool: malformed lengths and transfer codings are errors", "[http]") {
  HttpClient client = AnyClient();
  INFO(Name(client));
  for (const char* head : {
           "Content-Length : 2",
           "Content-Length: 2x",
           "Content-Length: -2",
           "Content-Length: 1\r\nContent-Length: 2",
           "Transfer-Encoding: chunked, gzip",
           "Transfer-Encoding: gzip",
           "Transfer-Encoding: chunked\r\nContent-Length: 2",
           " Folded: x",
           "X-Bad: a\x01"
           "b",
       }) {
    INFO(head);
    Reply reply(std::string("HTTP/1.1 200 OK\r\n") + head + "\r\n\r\n2\r\nok\r\n0\r\n\r\n");
    reply.close = true;
    auto r = AnswerWith(client, reply);
    CHECK(r.status == 0);
    CHECK_FALSE(r.error.empty());
  }
  Reply bad_chunk("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nok\r\n0\r\n\r\n");
  bad_chunk.close = true;
  CHECK(AnswerWith(client, bad_chunk).status == 0);
}

TEST_CASE("http pool: status lines are read strictly", "[http]") {
  HttpClient client = AnyClient();
  INFO(Name(client));
  for (const char* line :
       {"HTTP/1.1 2000 OK", "HTTP/1.1 200x", "HTTP/1.1 200x OK", "HTTP/1.9 200 OK",
        "HTTP/1.1 20 OK", "HTTP/1.1 099 OK", "HTTP/1.1  200 OK", "SSH-2.0-OpenSSH_9.2"}) {
    INFO(line);
    Reply reply(std::string(line) + "\r\nContent-Length: 2\r\n\r\nok");
    reply.close = true;
    auto r = AnswerWith(client, reply);
    CHECK(r.status == 0);
    CHECK_FALSE(r.error.empty());
  }
  for (const char* line : {"HTTP/1.1 200", "HTTP/1.0 200 OK", "HTTP/1.1 299 Custom"}) {
    INFO(line);
    auto r = AnswerWith(client, std::string(line) + "\r\nContent-Length: 2\r\n\r\nok");
    CHECK(r.status == std::stoi(std::string(line).substr(9, 3)));
    CHECK(r.body == "ok");
  }
}

TEST_CASE("http pool: refused connections and timeouts answer with status 0", "[http]") {
  HttpClient client = AnyClient();
  INFO(Name(client));
  HttpPool pool(For(client));
  auto port = replayer::testing::UnusedPort();
  auto r = RunOne(pool, Post("http://127.0.0.1:" + std::to_string(port) + "/", 7));
  CHECK(r.tag == 7);
  CHECK(r.status == 0);
  CHECK_FALSE(r.error.empty());

  ScriptedServer slow([](int, int, const std::string&) {
    Reply late(kOk);
    late.delay = 1500ms;
    return late;
  });
  auto req = Post(slow.url("/"), 8);
  req.timeout = 200ms;
  auto t0 = std::chrono::steady_clock::now();
  r = RunOne(pool, req);
  CHECK(r.status == 0);
  CHECK_FALSE(r.error.empty());
  CHECK(std::chrono::steady_clock::now() - t0 < 1000ms);
  // A body that trickles in past the timeout is cut off too.
  ScriptedServer trickle([](int, int, const std::string&) {
    Reply slow_body(
        "HTTP/1.1 200 OK\r\nContent-Length: 40\r\n\r\n0123456789012345678901234567890123456789");
    slow_body.piece = 1;
    slow_body.gap = 20ms;
    return slow_body;
  });
  req = Post(trickle.url("/"), 9);
  req.timeout = 300ms;
  t0 = std::chrono::steady_clock::now();
  r = RunOne(pool, req);
  CHECK(r.status == 0);
  CHECK(std::chrono::steady_clock::now() - t0 < 1500ms);
  CHECK(pool.in_flight() == 0);
}

TEST_CASE("http pool: many requests at once on many connections", "[http]") {
  HttpClient client = AnyClient();
  INFO(Name(client));
  ScriptedServer server([](int, int, const std::string&) {
    Reply r(kOk);
    r.delay = 20ms;
    return r;
  });
  HttpPool pool(For(client));
  constexpr int kN = 64;
  for (int i = 0; i < kN; ++i) pool.Submit(Post(server.url("/"), static_cast<uint64_t>(i)));
  CHECK(pool.in_flight() == kN);
  std::vector<int> seen(kN, 0);
  auto deadline = std::chrono::steady_clock::now() + 10s;
  int got = 0;
  while (got < kN && std::chrono::steady_clock::now() < deadline) {
    for (auto& r : pool.Poll(100ms)) {
      CHECK(r.status == 200);
      seen[r.tag]++;
      got++;
    }
  }
  CHECK(got == kN);
  CHECK(std::count(seen.begin(), seen.end(), 1) == kN);
  CHECK(pool.in_flight() == 0);
}

TEST_CASE("http pool: Wakeup ends a Poll early, from another thread", "[http]") {
  HttpPool pool;
  auto t0 = std::chrono::steady_clock::now();
  std::thread waker([&] {
    std::this_thread::sleep_for(50ms);  // the scenario: a Wakeup while the Poll is under way
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
