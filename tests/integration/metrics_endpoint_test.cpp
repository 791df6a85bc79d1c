// A running service's /metrics parses with Prometheus' own linter, and /healthz answers.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <map>
#include <sstream>
#include <thread>

#include "tests/support/test_stack.h"
#include "tests/support/wait.h"

using testsupport::Capture;

TEST_CASE("replayer /metrics passes promtool check metrics and /healthz answers",
          "[integration][metrics]") {
  testsupport::TestStack stack({"nats"});
  int rc = -1;
  Capture("NATS_URL=" + stack.Env("NATS_URL") + " " + testsupport::BinaryDir() +
              "/platformctl/platformctl init",
          &rc);
  REQUIRE(rc == 0);
  int port = testsupport::FreePortRange(2);
  // An Umami nobody listens on: the process health metrics get their "down" samples too.
  testsupport::ChildProcess replayer(
      {testsupport::BinaryDir() + "/replayer/replayer"},
      {{"NATS_URL", stack.Env("NATS_URL")},
       {"UMAMI_URLS", "http://127.0.0.1:" + std::to_string(port + 1)},
       {"METRICS_LISTEN", "127.0.0.1:" + std::to_string(port)}},
      stack.dir() + "/replayer.log");
  std::string url = "http://127.0.0.1:" + std::to_string(port);
  REQUIRE(testsupport::WaitFor(
      [&] {
        return Capture("curl -s " + url + "/metrics").find("replayer_umami_process_up") !=
               std::string::npos;
      },
      10'000));
  std::string metrics = Capture("curl -s " + url + "/metrics");
  CHECK_THAT(metrics, Catch::Contains("# TYPE replayer_events_stored_total counter"));
  CHECK_THAT(metrics, Catch::Contains("# TYPE replayer_send_duration_seconds histogram"));
  std::string lint = Capture("curl -s " + url + "/metrics | promtool check metrics 2>&1", &rc);
  INFO(lint);
  CHECK(rc == 0);
  // Every counter written (the lease keeper's too) says in its help that it resets on restart.
  std::istringstream lines(metrics);
  std::map<std::string, std::string> help;
  int counters = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("# HELP ", 0) == 0) {
      auto sp = line.find(' ', 7);
      help[line.substr(7, sp - 7)] = line.substr(sp + 1);
    } else if (line.rfind("# TYPE ", 0) == 0 && line.size() > 8 &&
               line.substr(line.size() - 8) == " counter") {
      std::string name = line.substr(7, line.size() - 15);
      INFO(name << ": " << help[name]);
      CHECK_THAT(help[name], Catch::Contains("restart"));
      ++counters;
    }
  }
  CHECK(counters >= 5);
  CHECK_THAT(metrics, Catch::Contains("# TYPE replayer_leadership_changes_total counter"));
  std::string health = Capture("curl -s -w ' %{http_code}' " + url + "/healthz");
  CHECK_THAT(health, Catch::Contains("nats: connected"));
  CHECK_THAT(health, Catch::EndsWith(" 200"));
  replayer.Signal(SIGTERM);
  CHECK(replayer.Wait(20'000) == 0);
}

namespace {

using testsupport::MsSince;

int Dial(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// GET path on a new connection; the status code, or -1 when no whole status line came within
// timeout_ms.
int Get(int port, const std::string& path, int timeout_ms, std::string* body = nullptr) {
  auto t0 = std::chrono::steady_clock::now();
  int fd = Dial(port);
  if (fd < 0) return -1;
  std::string req = "GET " + path + " HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n";
  if (send(fd, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) {
    close(fd);
    return -1;
  }
  std::string got;
  char buf[4096];
  while (true) {
    int left = timeout_ms - static_cast<int>(MsSince(t0));
    pollfd p{fd, POLLIN, 0};
    if (left <= 0 || poll(&p, 1, left) != 1) break;
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  if (got.rfind("HTTP/1.1 ", 0) != 0 || got.size() < 12) return -1;
  if (body != nullptr) *body = got;
  return std::stoi(got.substr(9, 3));
}

}  // namespace

TEST_CASE("/healthz answers within 1 s while 64 slow clients hold connections open",
          "[integration][metrics]") {
  testsupport::TestStack stack({"nats"});
  int port = testsupport::FreePortRange(1);
  testsupport::ChildProcess replayer({testsupport::BinaryDir() + "/replayer/replayer"},
                                     {{"NATS_URL", stack.Env("NATS_URL")},
                                      {"METRICS_LISTEN", "127.0.0.1:" + std::to_string(port)}},
                                     stack.dir() + "/replayer.log");
  REQUIRE(testsupport::WaitFor([&] { return Get(port, "/healthz", 1000) == 200; }, 15'000));

  // 32 clients that connect and send nothing (half-open requests), 32 that send a request head
  // one byte every 500 ms and never finish it. A closed one is opened again at once, as an
  // attacker would, so 64 are open all the time.
  constexpr int kSlow = 64;
  std::vector<int> fds(kSlow, -1);
  std::atomic<bool> done{false};
  std::atomic<int> reopened{0};
  std::thread attacker([&] {
    const std::string head = "GET /metrics HTTP/1.1\r\nHost: test\r\nX-Slow: ";
    std::vector<size_t> sent(kSlow, 0);
    while (!done) {
      for (int i = 0; i < kSlow; ++i) {
        if (fds[i] >= 0 && i % 2 == 1) {
          char c = sent[i] < head.size() ? head[sent[i]] : 'x';
          if (send(fds[i], &c, 1, MSG_NOSIGNAL) == 1) {
            ++sent[i];
          } else {
            close(fds[i]);
            fds[i] = -1;
          }
        }
        if (fds[i] >= 0) {
          // The server closed it (its request timeout): read the EOF.
          pollfd p{fds[i], POLLIN, 0};
          char buf[512];
          if (poll(&p, 1, 0) == 1 && recv(fds[i], buf, sizeof(buf), MSG_DONTWAIT) <= 0) {
            close(fds[i]);
            fds[i] = -1;
          }
        }
        if (fds[i] < 0) {
          fds[i] = Dial(port);
          sent[i] = 0;
          ++reopened;
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the trickle's pace
    }
    for (int fd : fds) {
      if (fd >= 0) close(fd);
    }
  });
  // All 64 open (the attacker's first round), then asked until the server's 3 s request timeout
  // has cut each slow connection once and it came back (or 30 s): slow connections come back.
  CHECK(testsupport::WaitFor([&] { return reopened.load() >= kSlow; }, 10'000));
  int64_t worst = 0;
  int answered = 0;
  int asked = 0;
  auto t_end = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (reopened.load() < 2 * kSlow && std::chrono::steady_clock::now() < t_end) {
    auto t0 = std::chrono::steady_clock::now();
    int status = Get(port, "/healthz", 1000);
    worst = std::max(worst, MsSince(t0));
    ++asked;
    if (status == 200) ++answered;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the pace of the asking
  }
  done = true;
  attacker.join();
  std::printf(
      "[metrics] /healthz with %d slow connections open: %d of %d answered, slowest %lld "
      "ms; slow connections opened %d times\n",
      kSlow, answered, asked, static_cast<long long>(worst), reopened.load());
  CHECK(answered == asked);
  CHECK(worst < 1000);
  // The slow connections were cut by the server and opened again (at least once each after the
  // first 64): the request timeout holds.
  CHECK(reopened.load() >= 2 * kSlow);
  replayer.Signal(SIGTERM);
  CHECK(replayer.Wait(20'000) == 0);
}

TEST_CASE("a second process on a taken METRICS_LISTEN fails at start with a clear error",
          "[integration][metrics]") {
  testsupport::TestStack stack({"nats"});
  int port = testsupport::FreePortRange(1);
  std::map<std::string, std::string> env = {
      {"NATS_URL", stack.Env("NATS_URL")}, {"METRICS_LISTEN", "127.0.0.1:" + std::to_string(port)}};
  testsupport::ChildProcess first({testsupport::BinaryDir() + "/replayer/replayer"}, env,
                                  stack.dir() + "/first.log");
  REQUIRE(testsupport::WaitFor([&] { return Get(port, "/healthz", 1000) == 200; }, 15'000));
  for (const auto& argv : std::vector<std::vector<std::string>>{
           {testsupport::BinaryDir() + "/replayer/replayer"},
           {testsupport::BinaryDir() + "/platformctl/platformctl", "streams", "--serve",
            "127.0.0.1:" + std::to_string(port)}}) {
    std::string log = stack.dir() + "/second.log";
    std::remove(log.c_str());
    testsupport::ChildProcess second(argv, env, log);
    int rc = second.Wait(10'000);
    std::string out = testsupport::Capture("cat " + log);
    INFO(out);
    CHECK(rc == 2);
    CHECK_THAT(out, Catch::Contains("cannot serve /metrics and /healthz on 127.0.0.1:" +
                                    std::to_string(port)) &&
                        Catch::Contains("Address already in use"));
  }
  // The first one still has the port, and every scrape is its own.
  std::string body;
  CHECK(Get(port, "/metrics", 2000, &body) == 200);
  CHECK_THAT(body, Catch::Contains("replayer_nats_connected 1"));
  first.Signal(SIGTERM);
  CHECK(first.Wait(20'000) == 0);
}

TEST_CASE("the endpoint answers only GET and HEAD on its two paths", "[integration][metrics]") {
  testsupport::TestStack stack({"nats"});
  int port = testsupport::FreePortRange(1);
  testsupport::ChildProcess replayer({testsupport::BinaryDir() + "/replayer/replayer"},
                                     {{"NATS_URL", stack.Env("NATS_URL")},
                                      {"METRICS_LISTEN", "127.0.0.1:" + std::to_string(port)}},
                                     stack.dir() + "/replayer.log");
  REQUIRE(testsupport::WaitFor([&] { return Get(port, "/healthz", 1000) == 200; }, 15'000));
  std::string url = "http://127.0.0.1:" + std::to_string(port);
  auto status = [&](const std::string& args) {
    return testsupport::Capture("curl -s -o /dev/null -w '%{http_code}' " + args);
  };
  CHECK(status(url + "/metrics") == "200");
  CHECK(status("-I " + url + "/metrics") == "200");
  CHECK(status("-X POST " + url + "/metrics") == "405");
  CHECK(status(url + "/") == "404");
  CHECK(status(url + "/metrics/x") == "404");
  CHECK(status(url + "/etc/passwd") == "404");
  replayer.Signal(SIGTERM);
  CHECK(replayer.Wait(20'000) == 0);
}

TEST_CASE("a password in UMAMI_URLS is refused at start and printed nowhere",
          "[integration][metrics]") {
  int rc = -1;
  std::string out = testsupport::Capture(
      "NATS_URL=nats://127.0.0.1:1 "
      "UMAMI_URLS=http://127.0.0.1:3000,http://umami:s3cr3t-pw@10.0.0.2:3000 " +
          testsupport::BinaryDir() + "/replayer/replayer 2>&1",
      &rc);
  INFO(out);
  CHECK(rc == 2);
  CHECK_THAT(out, Catch::Contains("UMAMI_URLS: 'http://***@10.0.0.2:3000' carries user info"));
  CHECK(out.find("s3cr3t") == std::string::npos);
  CHECK(out.find("umami:") == std::string::npos);
}
