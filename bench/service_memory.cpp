// service_memory (issue 36): each service's peak RSS against its byte budget, over several
// shapes of batches and events, to find the fixed overhead O with peak RSS <= budget + O.
//
//   service_memory [--only metricswriter|replayer] [--mw-overhead MIB] [--replayer-overhead MIB]
//
// The real service binaries run as child processes with their budget set
// (METRICSWRITER_MAX_BYTES_IN_FLIGHT, REPLAYER_MAX_BYTES_IN_FLIGHT); the peak is their VmHWM
// (/proc/<pid>/status). Each row prints the shape, the budget, the peak, the peak minus the
// budget (what the overhead must cover), the largest held-bytes gauge seen (sampled every 50 ms),
// the peak minus that (the overhead where the queue is smaller than the budget), and the idle
// RSS of the same binary measured in the same run (started on an empty queue, 2 s after its
// /metrics first answers). The ceiling is budget + the stated overhead (docs/operations.md,
// "Memory"); the exit status is 1 when a row passes it or a drain does not finish.
//
// metricswriter: a backlog queued in API_METRICS before the writer starts (real nats-server and
// PostgreSQL through TestStack), drained whole. replayer: events queued in WEB_EVENTS,
// either drained into bench/umami_sink (a stand-in answering at once) or held against an Umami
// that never answers (a socket that listens and accepts nothing) until the replayer holds all
// it may: its budget, or REPLAYER_MAX_IN_FLIGHT messages (900, and 10,000: how many a fetch
// may bring and the core hold, what counts for small events). A fresh nats-server per replayer
// row. Shapes: metricswriter, huge batches (7.25 MB of protobuf, 6 MB of JSON: the issue's
// case), many small ones, many series with long attribute strings; replayer, small events and
// 46 KB ones.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "bench/service_memory_shapes.h"
#include "common/nats_client.h"
#include "common/nats_stream.h"
#include "common/timefmt.h"
#include "tests/support/metrics_scrape.h"
#include "tests/support/nats_cluster.h"
#include "tests/support/silent_listener.h"
#include "tests/support/test_stack.h"
#include "tests/support/web_events.h"

namespace {

using bench_shapes::OtlpShape;
using Clock = std::chrono::steady_clock;
constexpr double kMiB = 1 << 20;

double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

struct Row {
  std::string service, shape, budget;
  double msg_kb = 0;  // one message's size (average), 1,000 bytes
  int count = 0;      // messages queued
  double peak_mib = 0, held_mib = 0, seconds = 0;
  double budget_mib = 0;
  bool finished = false;
};

// Scrapes the child's /metrics every 50 ms until done(text) or it exits or `timeout_s` passes;
// fills the row's peak (VmHWM), largest `held_gauge` and seconds.
void Watch(testsupport::ChildProcess& child, int port, const std::string& held_gauge,
           const std::function<bool(const std::string&)>& done, double timeout_s, Row* row) {
  const auto t0 = Clock::now();
  double held = 0;
  while (Since(t0) < timeout_s && kill(child.pid(), 0) == 0) {
    const std::string text = testsupport::Scrape(port);
    if (!text.empty()) {
      held = std::max(held, testsupport::MetricSum(text, held_gauge));
      if (done(text)) {
        row->finished = true;
        break;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  row->seconds = Since(t0);
  row->peak_mib = testsupport::ProcStatusKb(child.pid(), "VmHWM:") / 1024.0;
  row->held_mib = held / kMiB;
}

// The idle RSS: the binary on an empty queue, 2 s after its /metrics first answers.
double IdleMib(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
               int port, const std::string& log) {
  testsupport::ChildProcess child(argv, env, log);
  if (!testsupport::WaitFor([&] { return !testsupport::Scrape(port).empty(); }, 30'000)) return -1;
  std::this_thread::sleep_for(std::chrono::seconds(2));  // a measurement window, not a wait
  const double mib = testsupport::ProcStatusKb(child.pid(), "VmHWM:") / 1024.0;
  child.Signal(SIGTERM);
  child.Wait(20'000);
  return mib;
}

void Print(const Row& r, double idle, double overhead) {
  const double over = r.peak_mib - r.budget_mib;
  std::printf("%-13s %-34s %8.1f %6d %7s %8.1f %8.1f %8.1f %8.1f %6.1f %6.1f  %s\n",
              r.service.c_str(), r.shape.c_str(), r.msg_kb, r.count, r.budget.c_str(), r.peak_mib,
              over, r.held_mib, r.peak_mib - r.held_mib, idle, r.seconds,
              !r.finished        ? "NOT FINISHED"
              : over <= overhead ? "ok"
                                 : "OVER budget + overhead");
  std::fflush(stdout);
}

void Header(const char* service, double idle, double overhead) {
  std::printf(
      "\n%s: idle RSS %.1f MiB; ceiling: budget + %.0f MiB\n"
      "%-13s %-34s %8s %6s %7s %8s %8s %8s %8s %6s %6s\n",
      service, idle, overhead, "service", "shape", "msg KB", "msgs", "budget", "peak MiB",
      "-budget", "held MiB", "-held", "idle", "s");
}

int64_t g_points = 0;  // run-wide point number: unique timestamps and distinct series

bool RunMetricswriter(double overhead, std::vector<Row>* rows) {
  testsupport::TestStack stack({"nats", "pg"});
  auto nats = testsupport::InitAndConnect(stack);
  const int port = stack.base_port() + 5;
  const std::vector<std::string> argv = {testsupport::BinaryDir() + "/metricswriter/metricswriter"};
  auto env = [&](const std::string& budget) {
    return std::map<std::string, std::string>{
        {"NATS_URL", stack.Env("NATS_URL")},
        {"DATABASE_URL", stack.Env("DATABASE_URL")},
        {"METRICS_LISTEN", "127.0.0.1:" + std::to_string(port)},
        {"METRICSWRITER_MAX_BYTES_IN_FLIGHT", budget},
        {"LOG_LEVEL", "warn"}};
  };
  const double idle = IdleMib(argv, env("64MiB"), port, stack.dir() + "/idle.log");
  Header("metricswriter", idle, overhead);
  const std::vector<OtlpShape> shapes = {
      // The case: 25,000 points with 2 attributes, about 6 MB of JSON a batch.
      {.name = "JSON 25,000 pts x 2 attrs",
       .json = true,
       .batches = 30,
       .points = 25'000,
       .attrs = 2,
       .attr_len = 18},
      {.name = "protobuf 250,000 pts", .json = false, .batches = 12, .points = 250'000},
      {.name = "protobuf 60,000 pts x 2 attrs",
       .json = false,
       .batches = 20,
       .points = 60'000,
       .attrs = 2,
       .attr_len = 18},
      {.name = "JSON 20 pts x 1 attr (small)",
       .json = true,
       .batches = 3'000,
       .points = 20,
       .attrs = 1},
      {.name = "protobuf 20 pts (small)", .json = false, .batches = 3'000, .points = 20},
      {.name = "JSON 3,000 series x 3 x 300 ch",
       .json = true,
       .batches = 25,
       .points = 3'000,
       .attrs = 3,
       .attr_len = 300,
       .distinct = true},
  };
  bool ok = true;
  int run = 0;
  for (const auto& s : shapes) {
    for (const std::string budget : {"16MiB", "64MiB", "256MiB"}) {
      ++run;
      Row r{.service = "metricswriter", .shape = s.name, .budget = budget};
      r.budget_mib = std::stod(budget);
      const int64_t now = common::NowUnixNs();
      size_t bytes = 0;
      for (int i = 0; i < s.batches; ++i) {
        common::OutMessage m;
        m.subject = "api.metrics.tenant-" + std::to_string(i % 3);
        m.data = s.json ? bench_shapes::JsonBody(s, i, g_points, now)
                        : bench_shapes::ProtoBody(s, i, g_points, now);
        g_points += s.points;
        m.msg_id = "mem-" + std::to_string(run) + "-" + std::to_string(i);
        m.headers.emplace_back("Content-Type",
                               s.json ? "application/json" : "application/x-protobuf");
        bytes += m.data.size();
        if (auto ack = common::PublishSync(*nats, m); !ack.ok()) {
          std::fprintf(stderr, "publish: %s\n", ack.error().message.c_str());
          return false;
        }
      }
      r.count = s.batches;
      r.msg_kb = static_cast<double>(bytes) / s.batches / 1e3;
      testsupport::ChildProcess writer(argv, env(budget),
                                       stack.dir() + "/writer-" + std::to_string(run) + ".log");
      Watch(
          writer, port, "metricswriter_held_bytes",
          [&](const std::string& text) {
            return testsupport::MetricSum(text, "metricswriter_batches_stored_total") +
                       testsupport::MetricSum(text, "metricswriter_dead_lettered_total") >=
                   s.batches;
          },
          900, &r);
      writer.Signal(SIGTERM);
      writer.Wait(20'000);
      Print(r, idle, overhead);
      ok = ok && r.finished && r.peak_mib - r.budget_mib <= overhead;
      rows->push_back(r);
    }
  }
  return ok;
}

struct EventShape {
  const char* name;
  int events = 0;
  int data_keys = 0;  // 92: about 46 KB an event
  bool stalled = false;
  int max_in_flight = 900;
};

bool RunReplayer(double overhead, std::vector<Row>* rows) {
  const std::string bin = testsupport::BinaryDir() + "/replayer/replayer";
  const std::string sink_bin = testsupport::BinaryDir() + "/bench/umami_sink";
  const std::string site = "11111111-2222-4333-8444-555555555555";
  const std::vector<EventShape> shapes = {
      {.name = "small, drained", .events = 20'000},
      {.name = "small, stalled", .events = 20'000, .stalled = true},
      {.name = "small, stalled, 10,000 in flight",
       .events = 20'000,
       .stalled = true,
       .max_in_flight = 10'000},
      {.name = "46 KB, drained", .events = 2'000, .data_keys = 92},
      {.name = "46 KB, stalled", .events = 2'000, .data_keys = 92, .stalled = true},
      {.name = "46 KB, stalled, 10,000 in flight",
       .events = 2'000,
       .data_keys = 92,
       .stalled = true,
       .max_in_flight = 10'000},
  };
  bool ok = true;
  double idle = -1;
  for (const auto& s : shapes) {
    for (const std::string budget : {"16MiB", "64MiB", "256MiB"}) {
      testsupport::TestStack stack({"nats"});
      auto nats = testsupport::InitAndConnect(stack);
      const int port = stack.base_port() + 5, sink_port = stack.base_port() + 6;
      testsupport::ChildProcess sink({sink_bin, "--port", std::to_string(sink_port)}, {},
                                     stack.dir() + "/sink.log");
      testsupport::SilentListener silent;
      if (!silent.bound()) return false;
      std::map<std::string, std::string> env = {
          {"NATS_URL", stack.Env("NATS_URL")},
          {"UMAMI_URLS",
           "http://127.0.0.1:" + std::to_string(s.stalled ? silent.port() : sink_port)},
          {"METRICS_LISTEN", "127.0.0.1:" + std::to_string(port)},
          {"REPLAYER_MAX_BYTES_IN_FLIGHT", budget},
          {"REPLAYER_MAX_IN_FLIGHT", std::to_string(s.max_in_flight)},
          {"LOG_LEVEL", "warn"}};
      if (idle < 0) {
        idle = IdleMib({bin}, env, port, stack.dir() + "/idle.log");
        Header("replayer", idle, overhead);
      }
      Row r{.service = "replayer", .shape = s.name, .budget = budget};
      r.budget_mib = std::stod(budget);
      const std::string data = bench_shapes::EventData(s.data_keys);
      size_t bytes = 0;
      for (int i = 0; i < s.events; ++i) {
        testsupport::TestEvent e;
        e.site = site;
        e.id = "mem-" + std::to_string(i);
        e.visitor = i % 1000;
        e.seq = i / 1000;
        e.data_json = data;
        const auto m = testsupport::EventMessage(e);
        bytes += m.data.size();
        if (auto ack = common::PublishSync(*nats, m); !ack.ok()) {
          std::fprintf(stderr, "publish: %s\n", ack.error().message.c_str());
          return false;
        }
      }
      r.count = s.events;
      r.msg_kb = static_cast<double>(bytes) / s.events / 1e3;
      const double budget_bytes = r.budget_mib * kMiB;
      const double msg = static_cast<double>(bytes) / s.events;
      testsupport::ChildProcess replayer({bin}, env, stack.dir() + "/replayer.log");
      // Stalled: done once it holds all it may, or nothing more for 5 s (the queue fetched).
      double last_held = -1;
      Clock::time_point last_growth = Clock::now();
      Watch(
          replayer, port, "replayer_held_bytes",
          [&](const std::string& text) {
            if (!s.stalled) {
              return testsupport::MetricSum(text, "replayer_events_stored_total") +
                         testsupport::MetricSum(text, "replayer_events_dead_lettered_total") +
                         testsupport::MetricSum(text, "replayer_events_dropped_by_umami_total") >=
                     s.events;
            }
            const double held = testsupport::MetricSum(text, "replayer_held_bytes");
            const double msgs = testsupport::MetricSum(text, "replayer_held_messages");
            if (held > last_held) {
              last_held = held;
              last_growth = Clock::now();
            }
            // A held message is charged about twice its bytes and 2 KiB (replayer/core_io.h).
            return msgs >= s.max_in_flight || held >= budget_bytes - 2 * (2 * msg + 2048) ||
                   (held > 0 && Since(last_growth) > 5);
          },
          600, &r);
      Print(r, idle, overhead);
      ok = ok && r.finished && r.peak_mib - r.budget_mib <= overhead;
      rows->push_back(r);
      // A stalled replayer waits for its sends on SIGTERM: the child's end kills it.
    }
  }
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  std::string only;
  double mw_overhead = 160, replayer_overhead = 64;
  for (int i = 1; i + 1 < argc; ++i) {
    if (!std::strcmp(argv[i], "--only")) only = argv[i + 1];
    if (!std::strcmp(argv[i], "--mw-overhead")) mw_overhead = std::atof(argv[i + 1]);
    if (!std::strcmp(argv[i], "--replayer-overhead")) replayer_overhead = std::atof(argv[i + 1]);
  }
  common::NatsLibraryGuard guard;
  std::printf(
      "service_memory: peak RSS (VmHWM) of each service against its byte budget; "
      "'-budget' = peak - budget, what the fixed overhead must cover\n");
  std::vector<Row> rows;
  bool ok = true;
  if (only.empty() || only == "metricswriter") ok = RunMetricswriter(mw_overhead, &rows) && ok;
  if (only.empty() || only == "replayer") ok = RunReplayer(replayer_overhead, &rows) && ok;
  std::map<std::string, const Row*> worst;
  for (const auto& r : rows) {
    auto& w = worst[r.service];
    if (w == nullptr || r.peak_mib - r.budget_mib > w->peak_mib - w->budget_mib) w = &r;
  }
  std::printf("\n");
  for (const auto& [service, r] : worst) {
    std::printf("%s: largest peak - budget %.1f MiB (%s, budget %s) [<= %.0f MiB stated]\n",
                service.c_str(), r->peak_mib - r->budget_mib, r->shape.c_str(), r->budget.c_str(),
                service == "replayer" ? replayer_overhead : mw_overhead);
  }
  return ok ? 0 : 1;
}
