// umami_sink: an instant HTTP server that answers like Umami 2.10, for measuring the replayer's
// own ceiling (never as proof of behaviour: the tests use a real Umami).
//   umami_sink --port N [--threads T]
// POST /api/send → 200 with a bare cache token (403 "Website not found" for the probe's id);
// POST /api/batch → 404 (as 2.10), or with --batch 200 as Umami 3.x answers a batch it stored
// whole ({"size":n,"processed":n,"errors":0,"details":[],"cache":<token>});
// GET /api/heartbeat → 200. Counts the sends it answered at GET /count; GET /latency reports
// publish → received of stamped events (webgen --stamp).
//
// Why not cpp-httplib: its keep-alive wait polls every idle connection (10 ms poll, 1 ms sleep),
// so a client that leaves connections idle between requests pays the server CPU that a busy one
// (wrk) does not, on the same two cores. An epoll loop costs the same per request whoever calls,
// like Node.js (Umami), which is also one event loop per process: one thread by default.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

namespace {

constexpr std::string_view kProbeSite = "00000000-0000-4000-8000-000000000000";
constexpr std::string_view kToken = "eyJhbGciOiJIUzI1NiJ9.e30.sink";

struct Shared {
  bool batch = false;              // answers /api/batch
  std::atomic<uint64_t> sends{0};  // events answered (a batch's each)
  std::mutex mu;
  std::vector<double> latencies;  // publish -> received, ms
};

struct Conn {
  std::string in;
  std::string out;
  bool close_after = false;
  bool want_out = false;  // EPOLLOUT registered: a write was short
};

int64_t NowUnixNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool IEquals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

void Respond(Conn& c, int status, std::string_view reason, std::string_view body) {
  c.out += "HTTP/1.1 ";
  c.out += std::to_string(status);
  c.out += ' ';
  c.out += reason;
  c.out += "\r\nContent-Type: text/plain\r\nContent-Length: ";
  c.out += std::to_string(body.size());
  c.out += c.close_after ? "\r\nConnection: close\r\n\r\n" : "\r\n\r\n";
  c.out += body;
}

std::string LatencyReport(Shared& sh) {
  std::vector<double> v;
  {
    std::lock_guard lock(sh.mu);
    v.swap(sh.latencies);
  }
  if (v.empty()) return "0 0 0 0";
  std::sort(v.begin(), v.end());
  auto q = [&](double p) { return v[std::min(v.size() - 1, static_cast<size_t>(p * v.size()))]; };
  return std::to_string(q(0.5)) + " " + std::to_string(q(0.99)) + " " + std::to_string(v.back()) +
         " " + std::to_string(v.size());
}

// webgen --stamp's publish time at `at` ("pub_ns":"<ns>"; a bare number in older events).
int64_t Stamp(std::string_view body, size_t at) {
  size_t from = at + 9;
  if (from < body.size() && body[from] == '"') ++from;
  return std::strtoll(std::string(body.substr(from, 24)).c_str(), nullptr, 10);
}

void Handle(Conn& c, std::string_view method, std::string_view path, std::string_view body,
            Shared& sh) {
  if (method == "POST" && path == "/api/send") {
    if (body.find(kProbeSite) != std::string_view::npos) {
      Respond(c, 403, "Forbidden", "Website not found: " + std::string(kProbeSite) + ".");
      return;
    }
    sh.sends.fetch_add(1, std::memory_order_relaxed);
    auto at = body.find("\"pub_ns\":");
    if (at != std::string_view::npos) {
      std::lock_guard lock(sh.mu);
      sh.latencies.push_back(static_cast<double>(NowUnixNs() - Stamp(body, at)) / 1e6);
    }
    Respond(c, 200, "OK", kToken);
  } else if (method == "POST" && path == "/api/batch" && sh.batch) {
    size_t n = 0;
    for (size_t at = body.find("{\"type\":"); at != std::string_view::npos;
         at = body.find("{\"type\":", at + 1)) {
      ++n;
    }
    sh.sends.fetch_add(n, std::memory_order_relaxed);
    for (size_t at = body.find("\"pub_ns\":"); at != std::string_view::npos;
         at = body.find("\"pub_ns\":", at + 1)) {
      std::lock_guard lock(sh.mu);
      sh.latencies.push_back(static_cast<double>(NowUnixNs() - Stamp(body, at)) / 1e6);
    }
    Respond(c, 200, "OK",
            "{\"size\":" + std::to_string(n) + ",\"processed\":" + std::to_string(n) +
                ",\"errors\":0,\"details\":[],\"cache\":\"" + std::string(kToken) + "\"}");
  } else if (method == "GET" && path == "/api/heartbeat") {
    Respond(c, 200, "OK", "{\"ok\":true}");
  } else if (method == "GET" && path == "/count") {
    Respond(c, 200, "OK", std::to_string(sh.sends.load()));
  } else if (method == "GET" && path == "/latency") {
    Respond(c, 200, "OK", LatencyReport(sh));
  } else {
    Respond(c, 404, "Not Found", "not found");
  }
}

// Answers every complete request in c.in. False: malformed, close the connection.
bool Process(Conn& c, Shared& sh) {
  size_t pos = 0;
  while (true) {
    std::string_view rest(c.in.data() + pos, c.in.size() - pos);
    size_t end = rest.find("\r\n\r\n");
    if (end == std::string_view::npos) break;
    std::string_view head = rest.substr(0, end);
    size_t line_end = head.find("\r\n");
    std::string_view line = head.substr(0, line_end);
    size_t sp1 = line.find(' ');
    size_t sp2 = line.find(' ', sp1 + 1);
    if (sp1 == std::string_view::npos || sp2 == std::string_view::npos) return false;
    std::string_view method = line.substr(0, sp1);
    std::string_view path = line.substr(sp1 + 1, sp2 - sp1 - 1);
    size_t length = 0;
    bool close = false;
    std::string_view headers = line_end == std::string_view::npos ? "" : head.substr(line_end + 2);
    while (!headers.empty()) {
      size_t e = headers.find("\r\n");
      std::string_view h = headers.substr(0, e);
      headers = e == std::string_view::npos ? "" : headers.substr(e + 2);
      size_t colon = h.find(':');
      if (colon == std::string_view::npos) continue;
      std::string_view name = h.substr(0, colon);
      std::string_view value = h.substr(colon + 1);
      while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
      if (IEquals(name, "Content-Length"))
        length = std::strtoul(std::string(value).c_str(), nullptr, 10);
      if (IEquals(name, "Connection") && IEquals(value, "close")) close = true;
    }
    if (rest.size() < end + 4 + length) break;  // the body is not all here yet
    c.close_after = close;
    Handle(c, method, path, rest.substr(end + 4, length), sh);
    pos += end + 4 + length;
    if (close) break;
  }
  c.in.erase(0, pos);
  return true;
}

void Serve(int port, Shared& sh) {
  int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  setsockopt(lfd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(lfd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(lfd, 1024) != 0) {
    std::cerr << "umami_sink: cannot listen on 127.0.0.1:" << port << ": " << strerror(errno)
              << "\n";
    std::exit(1);
  }
  int ep = epoll_create1(EPOLL_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = lfd;
  epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
  std::unordered_map<int, std::unique_ptr<Conn>> conns;
  std::vector<epoll_event> events(512);
  char buf[65536];
  auto drop = [&](int fd) {
    epoll_ctl(ep, EPOLL_CTL_DEL, fd, nullptr);
    close(fd);
    conns.erase(fd);
  };
  while (true) {
    int n = epoll_wait(ep, events.data(), static_cast<int>(events.size()), -1);
    for (int i = 0; i < n; ++i) {
      int fd = events[i].data.fd;
      if (fd == lfd) {
        while (true) {
          int c = accept4(lfd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
          if (c < 0) break;
          setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          epoll_event cev{};
          cev.events = EPOLLIN;
          cev.data.fd = c;
          epoll_ctl(ep, EPOLL_CTL_ADD, c, &cev);
          conns[c] = std::make_unique<Conn>();
        }
        continue;
      }
      auto it = conns.find(fd);
      if (it == conns.end()) continue;
      Conn& c = *it->second;
      bool gone = false;
      if (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
        while (true) {
          ssize_t r = read(fd, buf, sizeof buf);
          if (r > 0) {
            c.in.append(buf, static_cast<size_t>(r));
            if (static_cast<size_t>(r) < sizeof buf) break;
            continue;
          }
          if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) gone = true;
          break;
        }
        if (!gone && !Process(c, sh)) gone = true;
      }
      if (!gone && !c.out.empty()) {
        ssize_t w = write(fd, c.out.data(), c.out.size());
        if (w > 0) c.out.erase(0, static_cast<size_t>(w));
        if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) gone = true;
      }
      if (!gone && c.want_out != !c.out.empty()) {
        c.want_out = !c.out.empty();
        epoll_event mev{};
        mev.events = c.want_out ? (EPOLLIN | EPOLLOUT) : EPOLLIN;
        mev.data.fd = fd;
        epoll_ctl(ep, EPOLL_CTL_MOD, fd, &mev);
      }
      if (gone || (c.close_after && c.out.empty())) drop(fd);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"instant Umami stand-in for benchmarks"};
  int port = 0;
  int threads = 1;
  app.add_option("--port", port)->required();
  app.add_option("--threads", threads, "event loops (one per thread, SO_REUSEPORT)");
  bool batch = false;
  app.add_flag("--batch", batch, "answer POST /api/batch as Umami 3.x (else 404, as 2.10)");
  CLI11_PARSE(app, argc, argv);
  Shared shared;
  shared.batch = batch;
  std::cerr << "umami_sink on 127.0.0.1:" << port << "\n";
  std::vector<std::thread> loops;
  for (int t = 1; t < threads; ++t) loops.emplace_back([&] { Serve(port, shared); });
  Serve(port, shared);
}
