// metrics_server_idle: how long /healthz and /metrics take to answer while many idle
// connections are open to the endpoint (common::MetricsServer, in this process).
//
//   metrics_server_idle [--connections N] [--seconds S] [--timeout-ms T] [--series K]
//
// Starts the server on 127.0.0.1 (a free port) with a registry of K histogram series (a
// replayer's exposition is of that order), opens N connections that send nothing (kept at N:
// one the server closes is opened again, as an attacker would), and for S seconds asks GET
// /healthz and GET /metrics one after the other on new connections. Prints, per path, how many
// answered 200 within T ms and the median and slowest time. Not run by ctest: figures in
// docs/measured.md ("The metrics endpoint under idle connections").
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "common/http_server.h"
#include "common/metrics.h"
#include "tests/support/idle_clients.h"

namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

struct Figures {
  int asked = 0;
  int answered = 0;
  std::vector<double> ms;
  void Print(const char* path, int connections, int timeout_ms) {
    std::sort(ms.begin(), ms.end());
    double median = ms.empty() ? 0 : ms[ms.size() / 2];
    double worst = ms.empty() ? 0 : ms.back();
    std::printf(
        "%-8s %d idle: %d of %d answered 200 within %d ms; median %.1f ms, slowest %.1f ms\n", path,
        connections, answered, asked, timeout_ms, median, worst);
  }
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Times /healthz and /metrics with many idle connections open"};
  int connections = 2000;
  int seconds = 8;
  int timeout_ms = 5000;
  int series = 200;
  app.add_option("--connections", connections, "idle connections kept open")
      ->check(CLI::Range(0, 10000));
  app.add_option("--seconds", seconds, "how long to ask")->check(CLI::Range(1, 600));
  app.add_option("--timeout-ms", timeout_ms, "how long one GET may take")
      ->check(CLI::Range(100, 60000));
  app.add_option("--series", series, "histogram series in the registry")
      ->check(CLI::Range(1, 100000));
  CLI11_PARSE(app, argc, argv);

  common::metrics::Registry registry;
  auto& hist = registry.AddHistogram("bench_duration_seconds", "What the bench observed.",
                                     {0.001, 0.01, 0.1, 1, 10}, {"target"});
  for (int i = 0; i < series; ++i) hist.With({"http://umami-" + std::to_string(i)}).Observe(0.02);
  common::MetricsServer server(registry, [] { return common::Health{true, "bench: ok\n"}; });
  if (auto st = server.Start("127.0.0.1:0"); !st) {
    std::fprintf(stderr, "%s\n", st.error().message.c_str());
    return 2;
  }
  std::string body;
  if (testsupport::HttpGet(server.port(), "/metrics", timeout_ms, &body) != 200) {
    std::fprintf(stderr, "no /metrics before the idle connections\n");
    return 1;
  }
  std::printf("exposition: %zu bytes\n", body.size());

  auto t_open = Clock::now();
  testsupport::IdleClients idle(server.port(), connections);
  std::printf("opened %d idle connections in %.0f ms\n", connections, MsSince(t_open));
  Figures health, metrics;
  auto until = Clock::now() + std::chrono::seconds(seconds);
  while (Clock::now() < until) {
    idle.Refresh();
    for (auto* f : {&health, &metrics}) {
      auto t0 = Clock::now();
      int status =
          testsupport::HttpGet(server.port(), f == &health ? "/healthz" : "/metrics", timeout_ms);
      f->ms.push_back(MsSince(t0));
      ++f->asked;
      if (status == 200) ++f->answered;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  health.Print("/healthz", connections, timeout_ms);
  metrics.Print("/metrics", connections, timeout_ms);
  std::printf("idle connections opened %lld times in all\n", static_cast<long long>(idle.opened()));
  auto t_stop = Clock::now();
  server.Stop();
  std::printf("Stop() took %.1f ms\n", MsSince(t_stop));
  return 0;
}
