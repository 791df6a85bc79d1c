// SIGTERM while NATS cannot be reached: every service logs its failed connect attempts, keeps
// trying, and exits 0 within 2 s of SIGTERM; platformctl's commands end within 2 s too. NATS is
// either a closed port (refused at once) or a paused nats-server (SIGSTOP: the kernel accepts
// the connection and nothing ever answers, as with a blackholed address).
#include <signal.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>

#include "tests/integration/nats_server_process.h"
#include "tests/support/proc_net.h"
#include "tests/support/test_stack.h"

using namespace testsupport;
using Clock = std::chrono::steady_clock;

namespace {

struct Unreachable {
  std::string kind;
  std::string url;
};

// Both kinds of unreachable NATS; the paused server lives as long as the returned holder.
std::vector<Unreachable> UnreachableNats(const TempDir& dir, const ClosedPort& closed,
                                         std::unique_ptr<NatsServerProcess>* paused) {
  *paused = std::make_unique<NatsServerProcess>(dir.path(), "paused", "");
  (*paused)->Pause();
  return {{"closed port", "nats://127.0.0.1:" + std::to_string(closed.port())},
          {"paused server", "nats://127.0.0.1:" + std::to_string((*paused)->port())}};
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (auto p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

// Starts argv with NATS at `url`, waits until it has logged `attempts` failed connect attempts,
// then `extra` more, sends SIGTERM and returns how long the exit took (ms; -1: still running
// after 10 s) and the exit status.
struct Outcome {
  int64_t exit_ms = -1;
  int status = -1;
  std::string log;
};

Outcome TermWhileUnreachable(const std::vector<std::string>& argv,
                             std::map<std::string, std::string> env, const std::string& log,
                             int attempts, std::chrono::milliseconds extra) {
  Outcome o;
  ChildProcess p(argv, env, log);
  bool tried =
      WaitFor([&] { return Count(ReadFile(log), "cannot connect to NATS at") >= size_t(attempts); },
              20'000);
  INFO(ReadFile(log));
  REQUIRE(tried);
  // Not a wait for anything: where in the retry cycle SIGTERM lands (the fault's timing).
  std::this_thread::sleep_for(extra);
  REQUIRE(p.Running());
  auto t0 = Clock::now();
  p.Signal(SIGTERM);
  o.status = p.Wait(10'000);
  if (o.status != -1) {
    o.exit_ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
  }
  o.log = ReadFile(log);
  std::printf("[shutdown] %s: exit %d after %lld ms\n", argv[0].c_str(), o.status,
              static_cast<long long>(o.exit_ms));
  return o;
}

}  // namespace

TEST_CASE("services log failed connects, keep trying, and exit 0 within 2 s of SIGTERM",
          "[integration][shutdown]") {
  TempDir dir;
  ClosedPort closed;
  std::unique_ptr<NatsServerProcess> paused;
  const std::string bin = BinaryDir();
  struct Service {
    std::string name;
    std::vector<std::string> argv;
    std::map<std::string, std::string> env;
  };
  // Port 0: any free port (nothing here scrapes it), so no other test can take it meanwhile.
  const std::string listen = "127.0.0.1:0";
  std::vector<Service> services = {
      {"replayer", {bin + "/replayer/replayer"}, {{"METRICS_LISTEN", listen}}},
      {"metricswriter",
       {bin + "/metricswriter/metricswriter"},
       {{"METRICS_LISTEN", listen}, {"DATABASE_URL", "postgresql://127.0.0.1:1/metrics"}}},
      {"exporter", {bin + "/platformctl/platformctl", "streams", "--serve", listen}, {}},
  };
  for (const auto& nats : UnreachableNats(dir, closed, &paused)) {
    for (auto s : services) {
      // SIGTERM at a few moments of the retry cycle (an attempt under way or the wait between).
      for (int extra_ms : {0, 700}) {
        DYNAMIC_SECTION(s.name << " with NATS at a " << nats.kind << ", SIGTERM +" << extra_ms
                               << " ms") {
          s.env["NATS_URL"] = nats.url;
          std::string log = dir.path() + "/" + s.name + std::to_string(extra_ms) + ".log";
          // Three failed attempts: it keeps trying, and says so each time.
          auto o = TermWhileUnreachable(s.argv, s.env, log, 3, std::chrono::milliseconds(extra_ms));
          INFO(o.log);
          CHECK(o.status == 0);
          CHECK(o.exit_ms >= 0);
          CHECK(o.exit_ms < 2000);
          CHECK(o.log.find(nats.url) != std::string::npos);
          CHECK(o.log.find("SIGTERM received") != std::string::npos);
        }
      }
    }
  }
}

TEST_CASE("a service answers /healthz 503 while it cannot reach NATS", "[integration][shutdown]") {
  TempDir dir;
  ClosedPort closed;
  int port = FreePortRange(1);
  ChildProcess p({BinaryDir() + "/replayer/replayer"},
                 {{"NATS_URL", "nats://127.0.0.1:" + std::to_string(closed.port())},
                  {"METRICS_LISTEN", "127.0.0.1:" + std::to_string(port)}},
                 dir.path() + "/replayer.log");
  std::string health;
  REQUIRE(WaitFor(
      [&] {
        health =
            Capture("curl -s -m 2 -w ' %{http_code}' http://127.0.0.1:" + std::to_string(port) +
                    "/healthz");
        return health.find(" 503") != std::string::npos;
      },
      10'000));
  CHECK_THAT(health, Catch::Contains("nats: not connected"));
  std::string metrics =
      Capture("curl -s -m 2 http://127.0.0.1:" + std::to_string(port) + "/metrics");
  CHECK_THAT(metrics, Catch::Contains("replayer_nats_connected 0"));
  p.Signal(SIGTERM);
  CHECK(p.Wait(5000) == 0);
}

TEST_CASE("platformctl commands end within 2 s of SIGTERM while NATS cannot be reached",
          "[integration][shutdown]") {
  TempDir dir;
  NatsServerProcess paused(dir.path(), "paused", "");
  paused.Pause();
  const std::string url = "nats://127.0.0.1:" + std::to_string(paused.port());
  const std::string ctl = BinaryDir() + "/platformctl/platformctl";
  struct Command {
    std::vector<std::string> argv;
    int status;  // what the command exits with
  };
  // dlq commands stop on SIGTERM and report that NATS could not be reached (3); the others
  // keep the default action of SIGTERM: they end at once, by the signal (128 + 15).
  std::vector<Command> commands = {
      {{ctl, "dlq", "list", "--queue", "web", "--all"}, 3},
      {{ctl, "streams", "--interval", "0"}, 128 + SIGTERM},
      {{ctl, "init"}, 128 + SIGTERM},
  };
  for (const auto& c : commands) {
    std::string label;
    for (size_t i = 1; i < c.argv.size(); ++i) label += (i > 1 ? " " : "") + c.argv[i];
    DYNAMIC_SECTION(label) {
      std::string log = dir.path() + "/" + c.argv[1] + std::to_string(c.argv.size()) + ".log";
      ChildProcess p(c.argv, {{"NATS_URL", url}}, log);
      if (c.status != 128 + SIGTERM) {
        // Not a fixed time from the start: under ASan on a busy CI machine, 300 ms was once
        // before the command had taken SIGTERM over, and the default action ended it (143).
        bool handles = WaitFor([&] { return p.Blocks(SIGTERM); }, 10'000);
        INFO(ReadFile(log));
        REQUIRE(handles);
      }
      // Inside the connect: its TCP connection to the paused server is up, and the server (stopped)
      // never sends the INFO that would complete the NATS connect.
      bool connecting = WaitFor(
          [&] { return testsupport::EstablishedSockets(p.pid(), paused.port(), false) > 0; },
          10'000);
      INFO(ReadFile(log));
      REQUIRE(connecting);
      REQUIRE(p.Running());
      auto t0 = Clock::now();
      p.Signal(SIGTERM);
      int status = p.Wait(10'000);
      auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
      std::printf("[shutdown] platformctl %s: exit %d after %lld ms\n", label.c_str(), status,
                  static_cast<long long>(ms));
      INFO(ReadFile(log));
      CHECK(status == c.status);
      CHECK(ms < 2000);
    }
  }
  // Without a signal, a command gives up after one connect timeout per server, naming them.
  int rc = -1;
  auto t0 = Clock::now();
  std::string out = Capture("NATS_URL=" + url + " " + ctl + " streams --interval 0 2>&1", &rc);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
  CHECK(rc == 3);
  CHECK_THAT(out, Catch::Contains("connect to NATS at " + url));
  CHECK(ms < 3000);
}

TEST_CASE("a running service whose NATS stops answering exits 0 within 2 s of SIGTERM",
          "[integration][shutdown]") {
  TempDir dir;
  NatsServerProcess server(dir.path(), "nats",
                           "jetstream { store_dir: \"" + dir.path() + "/js\" }\n");
  const std::string url = "nats://127.0.0.1:" + std::to_string(server.port());
  int rc = -1;
  std::string init =
      Capture("NATS_URL=" + url + " " + BinaryDir() + "/platformctl/platformctl init 2>&1", &rc);
  INFO(init);
  REQUIRE(rc == 0);
  const std::string bin = BinaryDir();
  const std::string listen = "127.0.0.1:0";
  struct Service {
    std::string name;
    std::vector<std::string> argv;
    std::map<std::string, std::string> env;
    std::string running;  // a log line that says it is at work
  };
  std::vector<Service> services = {
      {"replayer", {bin + "/replayer/replayer"}, {{"METRICS_LISTEN", listen}}, "leads: took"},
      {"metricswriter",
       {bin + "/metricswriter/metricswriter"},
       {{"METRICS_LISTEN", listen}, {"DATABASE_URL", "postgresql://127.0.0.1:1/metrics"}},
       "leads: took"},
      {"exporter",
       {bin + "/platformctl/platformctl", "streams", "--serve", listen, "--interval", "1s"},
       {},
       "serving JetStream"},
  };
  for (auto s : services) {
    DYNAMIC_SECTION(s.name) {
      s.env["NATS_URL"] = url;
      s.env["LOCK_TTL"] = "15s";
      std::string log = dir.path() + "/" + s.name + ".log";
      ChildProcess p(s.argv, s.env, log);
      bool running =
          WaitFor([&] { return ReadFile(log).find(s.running) != std::string::npos; }, 20'000);
      INFO(ReadFile(log));
      REQUIRE(running);
      // The scenario, not a wait for anything: at work for a while (fetches, lease renewals,
      // scrapes of JetStream), then NATS stops answering with requests of it under way, and
      // SIGTERM comes while they wait for answers that never come.
      std::this_thread::sleep_for(std::chrono::milliseconds(1500));
      server.Pause();  // the connection stays "connected": nothing answers any more
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      auto t0 = Clock::now();
      p.Signal(SIGTERM);
      int status = p.Wait(30'000);
      auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
      server.Resume();
      std::printf("[shutdown] %s, NATS paused while running: exit %d after %lld ms\n",
                  s.name.c_str(), status, static_cast<long long>(ms));
      INFO(ReadFile(log));
      CHECK(status == 0);
      CHECK(ms < 2000);
    }
  }
}
