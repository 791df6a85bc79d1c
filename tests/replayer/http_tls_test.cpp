// The HTTP pool over https://: a test CA made with openssl, a cpp-httplib TLS server standing in
// for Umami, and the request-side rule (a header value with CR LF never reaches the wire) shown
// where it matters most: libcurl itself would put the smuggled request on the wire, as the
// control case below proves with the same server.
#include <curl/curl.h>
#include <httplib.h>
#include <catch2/catch.hpp>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "replayer/http_pool.h"
#include "tests/replayer/http_test_ca.h"
#include "tests/replayer/http_test_server.h"

using namespace replayer;
using namespace std::chrono_literals;
using replayer::testing::TestCa;

namespace {

const char* kSmuggling =
    "Mozilla/5.0\r\nContent-Length: 0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: 127.0.0.1";

// An https:// stand-in for Umami: answers every request 200 with a token and records the
// method, path and headers of each request it parsed.
class TlsServer {
 public:
  struct Seen {
    std::string method, path, user_agent, body;
  };
  TlsServer(const std::string& cert, const std::string& key) : server_(cert.c_str(), key.c_str()) {
    REQUIRE(server_.is_valid());
    auto handler = [this](const httplib::Request& req, httplib::Response& res) {
      {
        std::lock_guard lock(mu_);
        seen_.push_back({req.method, req.path, req.get_header_value("User-Agent"), req.body});
      }
      res.set_content("tok", "text/plain");
    };
    server_.Get(".*", handler);
    server_.Post(".*", handler);
    port_ = server_.bind_to_any_port("127.0.0.1");
    REQUIRE(port_ > 0);
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // is_running() is httplib's readiness signal (0.11 has no blocking wait for it); until it is
    // true, stop() would not end the listen loop. Polled every 5 ms, for 1 s at most.
    for (int i = 0; i < 200 && !server_.is_running(); ++i) std::this_thread::sleep_for(5ms);
    REQUIRE(server_.is_running());
  }
  ~TlsServer() {
    server_.stop();
    thread_.join();
  }
  std::string url(const std::string& path) const {
    return "https://127.0.0.1:" + std::to_string(port_) + path;
  }
  std::vector<Seen> seen() {
    std::lock_guard lock(mu_);
    return seen_;
  }
  int count(const std::string& path) {
    std::lock_guard lock(mu_);
    int n = 0;
    for (const auto& s : seen_) n += s.path == path;
    return n;
  }

 private:
  httplib::SSLServer server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::vector<Seen> seen_;
};

HttpResponse RunTls(HttpPool& pool, HttpRequest r) {
  pool.Submit(std::move(r));
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < deadline) {
    auto done = pool.Poll(100ms);
    if (!done.empty()) return done.front();
  }
  FAIL("no answer in time");
  return {};
}

HttpRequest TlsPost(const std::string& url, std::string user_agent) {
  HttpRequest r;
  r.tag = 5;
  r.url = url;
  r.post = true;
  r.body = "{\"real\":\"body\"}";
  r.headers.emplace_back("Content-Type", "application/json");
  r.headers.emplace_back("User-Agent", std::move(user_agent));
  r.headers.emplace_back("X-Forwarded-For", "203.0.113.9");
  return r;
}

HttpPool TrustingPool(const TestCa& ca) {
  HttpPoolOptions o;
  o.ca_file = ca.path("ca.pem");
  return HttpPool(o);
}

// libcurl on its own, without the pool's check: what a header value turns into on the wire.
long CurlDirect(const std::string& url, const std::string& user_agent, const std::string& ca) {
  CURL* easy = curl_easy_init();
  REQUIRE(easy != nullptr);
  std::string line = "User-Agent: " + user_agent;
  curl_slist* headers = curl_slist_append(nullptr, line.c_str());
  std::string body = "{\"real\":\"body\"}";
  curl_easy_setopt(easy, CURLOPT_URL, url.c_str());
  curl_easy_setopt(easy, CURLOPT_POSTFIELDS, body.c_str());
  curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
  if (!ca.empty()) curl_easy_setopt(easy, CURLOPT_CAINFO, ca.c_str());
  curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, 5000L);
  curl_easy_setopt(
      easy, CURLOPT_WRITEFUNCTION, +[](char*, size_t size, size_t n, void*) { return size * n; });
  CURLcode rc = curl_easy_perform(easy);
  long code = 0;
  curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &code);
  curl_slist_free_all(headers);
  curl_easy_cleanup(easy);
  return rc == CURLE_OK ? code : -1;
}

}  // namespace

TEST_CASE("https: a request verified against the test CA, answered, connection kept", "[http]") {
  TestCa ca;
  TlsServer server(ca.path("server.pem"), ca.path("server.key"));
  HttpPool pool = TrustingPool(ca);
  for (int i = 0; i < 3; ++i) {
    auto r = RunTls(pool, TlsPost(server.url("/api/send"), "Mozilla/5.0 (X11; Linux x86_64)"));
    CHECK(r.tag == 5);
    CHECK(r.status == 200);
    CHECK(r.body == "tok");
    CHECK(r.error.empty());
  }
  auto seen = server.seen();
  REQUIRE(seen.size() == 3);
  CHECK(seen[0].method == "POST");
  CHECK(seen[0].path == "/api/send");
  CHECK(seen[0].user_agent == "Mozilla/5.0 (X11; Linux x86_64)");
  CHECK(seen[0].body == "{\"real\":\"body\"}");
  HttpRequest get;
  get.url = server.url("/api/heartbeat");
  CHECK(RunTls(pool, get).status == 200);
}

TEST_CASE("https: a server whose certificate the CA did not sign is refused", "[http]") {
  TestCa ca;
  TlsServer server(ca.path("other.pem"), ca.path("other.key"));  // self-signed, another CA
  HttpPool pool = TrustingPool(ca);
  auto r = RunTls(pool, TlsPost(server.url("/api/send"), "Mozilla/5.0"));
  CHECK(r.status == 0);
  CHECK_THAT(r.error, Catch::Contains("certificate"));
  CHECK(server.seen().empty());
}

TEST_CASE("https: a CR LF in a header value does not smuggle a request", "[http]") {
  TestCa ca;
  TlsServer server(ca.path("server.pem"), ca.path("server.key"));
  // Control: libcurl alone writes the value as it is, and the server reads a second request,
  // GET /smuggled with the real body. This is what the pool must prevent.
  CHECK(CurlDirect(server.url("/api/send"), kSmuggling, ca.path("ca.pem")) == 200);
  for (int i = 0; i < 300 && server.count("/smuggled") == 0; ++i) std::this_thread::sleep_for(10ms);
  REQUIRE(server.count("/smuggled") == 1);
  auto before = server.seen().size();

  HttpPool pool = TrustingPool(ca);
  for (std::string bad : {std::string(kSmuggling), std::string("a\nb"), std::string("a\rb"),
                          std::string("a\0b", 3), std::string("a\x01z"), std::string("a\x7fz")}) {
    auto r = RunTls(pool, TlsPost(server.url("/api/send"), bad));
    CHECK(r.status == 0);
    CHECK_THAT(r.error, Catch::Contains("header User-Agent holds a control character"));
  }
  CHECK(server.seen().size() == before);
  CHECK(server.count("/smuggled") == 1);  // only the control's
  // The pool still works on that server afterwards.
  CHECK(RunTls(pool, TlsPost(server.url("/api/send"), "Mozilla/5.0\tok")).status == 200);
  CHECK(server.seen().back().user_agent == "Mozilla/5.0\tok");
}

TEST_CASE("http: the control case on plain http, and the pool's refusal, for both clients",
          "[http]") {
  replayer::testing::ScriptedServer server(
      [](int, int, const std::string&) { return "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"; });
  CHECK(CurlDirect(server.url("/api/send"), kSmuggling, "") == 200);
  for (int i = 0; i < 100 && server.count("GET /smuggled ") == 0; ++i)
    std::this_thread::sleep_for(10ms);
  REQUIRE(server.count("GET /smuggled ") == 1);
  for (HttpClient client : {HttpClient::kRaw, HttpClient::kCurl}) {
    HttpPoolOptions o;
    o.http_client = client;
    HttpPool pool(o);
    auto r = RunTls(pool, TlsPost(server.url("/api/send"), kSmuggling));
    CHECK(r.status == 0);
  }
  CHECK(server.count("GET /smuggled ") == 1);
  CHECK(server.requests().size() == 2);  // the control's two, nothing from the pool
}
