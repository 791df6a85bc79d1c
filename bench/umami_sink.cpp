// umami_sink: an instant HTTP server that answers like Umami 2.10, for measuring the replayer's
// own ceiling (never as proof of behaviour: the tests use a real Umami).
//   umami_sink --port N [--threads T]
// POST /api/send → 200 with a bare cache token (403 "Website not found" for the probe's id);
// GET /api/heartbeat → 200. Counts the sends it answered at GET /count.
#include <httplib.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <iostream>
#include <mutex>
#include <vector>

int main(int argc, char** argv) {
  CLI::App app{"instant Umami stand-in for benchmarks"};
  int port = 0;
  int threads = 256;
  app.add_option("--port", port)->required();
  app.add_option("--threads", threads, "worker threads (one per keep-alive connection)");
  CLI11_PARSE(app, argc, argv);
  std::atomic<uint64_t> sends{0};
  std::mutex mu;
  std::vector<double> latencies;  // publish -> received, ms
  httplib::Server server;
  server.set_tcp_nodelay(true);  // without it Nagle caps cpp-httplib at ~2k req/s
  server.set_keep_alive_max_count(1000000);
  server.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  server.Post("/api/send", [&](const httplib::Request& req, httplib::Response& res) {
    if (req.body.find("00000000-0000-4000-8000-000000000000") != std::string::npos) {
      res.status = 403;
      res.set_content("Website not found: 00000000-0000-4000-8000-000000000000.", "text/plain");
      return;
    }
    sends.fetch_add(1, std::memory_order_relaxed);
    // webgen --stamp puts the publish time (unix ns) into the event data as "pub_ns".
    auto at = req.body.find("\"pub_ns\":");
    if (at != std::string::npos) {
      int64_t pub = std::stoll(req.body.substr(at + 9));
      int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::system_clock::now().time_since_epoch())
                        .count();
      std::lock_guard lock(mu);
      latencies.push_back(static_cast<double>(now - pub) / 1e6);
    }
    res.set_content("eyJhbGciOiJIUzI1NiJ9.e30.sink", "text/plain");
  });
  server.Get("/api/heartbeat", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("{\"ok\":true}", "application/json");
  });
  server.Get("/count", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content(std::to_string(sends.load()), "text/plain");
  });
  // p50 p99 max count of publish -> received, in ms (then forgets them).
  server.Get("/latency", [&](const httplib::Request&, httplib::Response& res) {
    std::vector<double> v;
    {
      std::lock_guard lock(mu);
      v.swap(latencies);
    }
    if (v.empty()) {
      res.set_content("0 0 0 0", "text/plain");
      return;
    }
    std::sort(v.begin(), v.end());
    auto q = [&](double p) { return v[std::min(v.size() - 1, static_cast<size_t>(p * v.size()))]; };
    res.set_content(std::to_string(q(0.5)) + " " + std::to_string(q(0.99)) + " " +
                        std::to_string(v.back()) + " " + std::to_string(v.size()),
                    "text/plain");
  });
  std::cerr << "umami_sink on 127.0.0.1:" << port << "\n";
  return server.listen("127.0.0.1", port) ? 0 : 1;
}
