// umami_sink: an instant HTTP server that answers like Umami 2.10, for measuring the replayer's
// own ceiling (never as proof of behaviour: the tests use a real Umami).
//   umami_sink --port N [--threads T]
// POST /api/send → 200 with a bare cache token (403 "Website not found" for the probe's id);
// GET /api/heartbeat → 200. Counts the sends it answered at GET /count.
#include <httplib.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <iostream>

int main(int argc, char** argv) {
  CLI::App app{"instant Umami stand-in for benchmarks"};
  int port = 0;
  int threads = 256;
  app.add_option("--port", port)->required();
  app.add_option("--threads", threads, "worker threads (one per keep-alive connection)");
  CLI11_PARSE(app, argc, argv);
  std::atomic<uint64_t> sends{0};
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
    res.set_content("eyJhbGciOiJIUzI1NiJ9.e30.sink", "text/plain");
  });
  server.Get("/api/heartbeat", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("{\"ok\":true}", "application/json");
  });
  server.Get("/count", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content(std::to_string(sends.load()), "text/plain");
  });
  std::cerr << "umami_sink on 127.0.0.1:" << port << "\n";
  return server.listen("127.0.0.1", port) ? 0 : 1;
}
