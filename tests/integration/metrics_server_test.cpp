// common::MetricsServer in this process: concurrent scrapes, requests it refuses, and Stop()
// with connections open.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "common/http_server.h"
#include "tests/support/idle_clients.h"
#include "tests/support/proc_net.h"
#include "tests/support/test_stack.h"

namespace {

// Sends `request` on a new connection and returns all the server sent until it closed.
std::string Exchange(int port, const std::string& request) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string got;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
          static_cast<ssize_t>(request.size())) {
    char buf[4096];
    pollfd p{fd, POLLIN, 0};
    while (poll(&p, 1, 5000) == 1) {
      ssize_t n = recv(fd, buf, sizeof(buf), 0);
      if (n <= 0) break;
      got.append(buf, static_cast<size_t>(n));
    }
  }
  close(fd);
  return got;
}

}  // namespace

TEST_CASE("concurrent scrapes each get a whole exposition and refused requests their status",
          "[integration][metrics]") {
  common::metrics::Registry registry;
  auto& c = registry.AddCounter("test_scrapes_total", "Scrapes (resets on restart).");
  std::atomic<int> collected{0};
  registry.AddCollector([&] {
    // A slow collector, so that scrapes arrive while one runs and share the next (the slowness
    // is what is tested, not a wait).
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ++collected;
  });
  c.With({}).Inc();
  common::MetricsServer server(registry, [] { return common::Health{true, "test: ok\n"}; });
  REQUIRE(server.Start("127.0.0.1:0"));
  const int port = server.port();

  constexpr int kThreads = 8;
  constexpr int kEach = 10;
  std::atomic<int> whole{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kEach; ++i) {
        std::string got = Exchange(port, "GET /metrics HTTP/1.1\r\n\r\n");
        if (got.rfind("HTTP/1.1 200 OK\r\n", 0) == 0 &&
            got.find("test_scrapes_total 1") != std::string::npos) {
          ++whole;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(whole == kThreads * kEach);
  CHECK(collected.load() < kThreads * kEach);  // shared

  CHECK_THAT(Exchange(port, "HEAD /metrics HTTP/1.1\r\n\r\n"),
             Catch::StartsWith("HTTP/1.1 200 OK\r\n") && Catch::EndsWith("\r\n\r\n"));
  CHECK_THAT(Exchange(port, "GET /healthz HTTP/1.0\n\n"),
             Catch::StartsWith("HTTP/1.1 200 OK\r\n") && Catch::EndsWith("ok\ntest: ok\n"));
  CHECK_THAT(Exchange(port, "POST /healthz HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc"),
             Catch::StartsWith("HTTP/1.1 405 "));
  CHECK_THAT(Exchange(port, "hello\r\n\r\n"), Catch::StartsWith("HTTP/1.1 400 "));
  CHECK_THAT(Exchange(port, "GET /healthz HTTP/1.1\r\nX: " + std::string(9000, 'x') + "\r\n\r\n"),
             Catch::StartsWith("HTTP/1.1 431 "));

  // Stop() closes held connections at once.
  testsupport::IdleClients idle(port, 100);
  // Held: the server has accepted all 100 (its descriptors are this process's too).
  CHECK(testsupport::WaitFor(
      [&] { return testsupport::EstablishedSockets(getpid(), port, true) == 100; }, 5'000));
  auto t0 = std::chrono::steady_clock::now();
  server.Stop();
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(500));
  CHECK(testsupport::HttpGet(port, "/healthz", 500) == -1);
}
