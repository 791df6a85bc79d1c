// metricswriter backlog benchmark (issue 14): N protobuf batches of P points each queued in
// API_METRICS while no writer runs, then the real metricswriter binary starts and drains them.
// Prints the writer's peak RSS (VmHWM) beside the target and the backlog's own size, the
// largest metricswriter_held_bytes seen beside METRICSWRITER_MAX_BYTES_IN_FLIGHT, the drain
// rate, whether nats.c reported a slow consumer, and the queue after the drain as every test
// judges it (tests/support/queue_judge.h: drained, nothing left behind). Exit 1 when a row is
// missing, a slow consumer was reported or the queue is not drained and empty.
//
//   metricswriter_backlog_bench [--batches 30] [--points 250000] [--writer PATH]
//                               [--json-attributes N]   (OTLP JSON, N attributes a point)
//
// --writer runs another build's binary (e.g. the commit before, for comparison); it must accept
// the same environment. METRICSWRITER_* variables of the bench's environment reach the writer.
// Starts its own nats-server + PostgreSQL (TestStack).
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>

#include "common/nats_client.h"
#include "common/nats_stream.h"
#include "common/pg_conn.h"
#include "common/timefmt.h"
#include "metricswriter/proto/otlp_metrics.pb.h"
#include "platformctl/nats_admin.h"
#include "tests/support/metrics_scrape.h"
#include "tests/support/nats_cluster.h"
#include "tests/support/queue_judge.h"
#include "tests/support/test_stack.h"

namespace {

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// One gauge of `points` points without attributes: about 29 bytes a point on the wire.
std::string Body(int batch, int points, int64_t t) {
  mw::otlp::ExportMetricsServiceRequest req;
  auto* rm = req.add_resource_metrics();
  auto* a = rm->mutable_resource()->add_attributes();
  a->set_key("service.name");
  a->mutable_value()->set_string_value("backlog-" + std::to_string(batch % 10));
  auto* sm = rm->add_scope_metrics();
  sm->mutable_scope()->set_name("bench");
  auto* m = sm->add_metrics();
  m->set_name("backlog.value");
  m->set_unit("1");
  auto* g = m->mutable_gauge();
  g->mutable_data_points()->Reserve(points);
  for (int p = 0; p < points; ++p) {
    auto* dp = g->add_data_points();
    dp->set_start_time_unix_nano(static_cast<uint64_t>(t));
    dp->set_time_unix_nano(static_cast<uint64_t>(t + p));
    dp->set_as_double(p * 0.25);
  }
  return req.SerializeAsString();
}

// The same gauge as OTLP JSON, each point with `attrs` attributes (a host and routes: what an
// API's request metrics carry): about 250 bytes a point with 2.
std::string JsonBody(int batch, int points, int64_t t, int attrs) {
  std::string out;
  out.reserve(static_cast<size_t>(points) * (150 + 60 * attrs) + 256);
  out += R"({"resourceMetrics":[{"resource":{"attributes":[{"key":"service.name","value":)";
  out += R"({"stringValue":"backlog-)" + std::to_string(batch % 10) + R"("}}]},)";
  out += R"("scopeMetrics":[{"scope":{"name":"bench"},"metrics":[{"name":"backlog.value",)";
  out += R"("unit":"1","gauge":{"dataPoints":[)";
  for (int p = 0; p < points; ++p) {
    if (p > 0) out += ',';
    out += R"({"attributes":[)";
    for (int a = 0; a < attrs; ++a) {
      if (a > 0) out += ',';
      out += R"({"key":"attr.)" + std::to_string(a) + R"(","value":{"stringValue":"value-)" +
             std::to_string((p * 7 + a) % 1000) + R"(-of-the-route"}})";
    }
    out += R"(],"startTimeUnixNano":")" + std::to_string(t) + R"(","timeUnixNano":")" +
           std::to_string(t + p) + R"(","asDouble":)" + std::to_string(p) + ".25}";
  }
  out += "]}}]}]}]}";
  return out;
}

int64_t Count(common::pg::PgConn& pg, const std::string& sql) {
  auto r = pg.Query(sql);
  if (!r.ok() || r->rows() == 0) return -1;
  return std::stoll(std::string(r->Get(0, 0)));
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

int main(int argc, char** argv) {
  int batches = 30, points = 250'000, attrs = -1;  // attrs >= 0: OTLP JSON
  std::string writer_bin = testsupport::BinaryDir() + "/metricswriter/metricswriter";
  for (int i = 1; i + 1 < argc; ++i) {
    if (!std::strcmp(argv[i], "--batches")) batches = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--points")) points = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--writer")) writer_bin = argv[i + 1];
    if (!std::strcmp(argv[i], "--json-attributes")) attrs = std::atoi(argv[i + 1]);
  }
  const bool json = attrs >= 0;
  common::NatsLibraryGuard guard;
  testsupport::TestStack stack({"nats", "pg"});
  auto nats = testsupport::InitAndConnect(stack);

  // The backlog, queued while no writer runs.
  const int64_t now = common::NowUnixNs();
  size_t bytes = 0;
  auto t0 = Clock::now();
  for (int i = 0; i < batches; ++i) {
    common::OutMessage m;
    m.subject = "api.metrics.tenant-" + std::to_string(i % 3);
    m.data = json ? JsonBody(i, points, now + int64_t{i} * points, attrs)
                  : Body(i, points, now + int64_t{i} * points);
    m.msg_id = "backlog-" + std::to_string(i);
    m.headers.emplace_back("Content-Type", json ? "application/json" : "application/x-protobuf");
    bytes += m.data.size();
    auto ack = common::PublishSync(*nats, m);
    if (!ack.ok()) {
      std::fprintf(stderr, "publish: %s\n", ack.error().message.c_str());
      return 1;
    }
  }
  std::printf(
      "metricswriter backlog bench: %d %s batches x %d points, %.2f MB each (%.1f MB "
      "queued in %.1f s)\n",
      batches,
      json ? ("JSON (" + std::to_string(attrs) + " attributes a point)").c_str() : "protobuf",
      points, static_cast<double>(bytes) / batches / 1e6, static_cast<double>(bytes) / 1e6,
      Since(t0));
  std::printf("  writer: %s\n", writer_bin.c_str());

  const int port = stack.base_port() + 5;
  std::map<std::string, std::string> env = {
      {"NATS_URL", stack.Env("NATS_URL")},
      {"DATABASE_URL", stack.Env("DATABASE_URL")},
      {"METRICS_LISTEN", "127.0.0.1:" + std::to_string(port)},
      {"LOG_LEVEL", "info"},
  };
  for (char** e = environ; *e != nullptr; ++e) {
    std::string kv = *e;
    if (kv.rfind("METRICSWRITER_", 0) == 0) {
      env[kv.substr(0, kv.find('='))] = kv.substr(kv.find('=') + 1);
    }
  }
  const std::string log = stack.dir() + "/backlog-writer.log";
  auto pg = common::pg::PgConn::Connect(stack.Env("DATABASE_URL"), {});
  t0 = Clock::now();
  testsupport::ChildProcess writer({writer_bin}, env, log);
  double held_max = -1;  // stays -1 for a writer without the gauge
  long rss_max_kb = 0;
  int64_t stored = 0;
  while (true) {
    const std::string text = testsupport::Scrape(port);
    if (!text.empty()) {
      stored =
          static_cast<int64_t>(testsupport::MetricSum(text, "metricswriter_batches_stored_total"));
      if (text.find("metricswriter_held_bytes ") != std::string::npos) {
        held_max = std::max(held_max, testsupport::MetricSum(text, "metricswriter_held_bytes"));
      }
    }
    rss_max_kb = std::max(rss_max_kb, testsupport::ProcStatusKb(writer.pid(), "VmRSS:"));
    if (stored >= batches) break;
    if (kill(writer.pid(), 0) != 0) {
      std::printf("  the writer exited before the backlog was stored (%lld of %d)\n",
                  static_cast<long long>(stored), batches);
      return 1;
    }
    if (Since(t0) > 1800) {
      std::printf("  not drained after 30 min (%lld of %d)\n", static_cast<long long>(stored),
                  batches);
      return 1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const double seconds = Since(t0);
  const long hwm_kb = testsupport::ProcStatusKb(writer.pid(), "VmHWM:");
  // Every batch stored by the writer's count; the queue itself judged as every test judges it
  // (drained, nothing left behind), outside the timed drain: a store acked later is a wait here.
  std::string queue = "no reading";
  const bool drained = testsupport::WaitFor(
      [&] {
        auto r = platformctl::nats_admin::ReadStream(*nats, "API_METRICS");
        if (!r) return false;
        queue = testsupport::judge::Describe(*r);
        return testsupport::judge::Drained(*r) && testsupport::judge::LeftBehind(*r) == 0;
      },
      30'000);
  writer.Signal(SIGTERM);
  writer.Wait(20'000);
  const int64_t rows = pg.ok() ? Count(**pg, "SELECT count(*) FROM metrics.number_points") : -1;
  const std::string text = ReadFile(log);
  const bool slow = text.find("Slow Consumer") != std::string::npos;
  std::printf("  drained in %.1f s: %.0f points/s; rows stored %lld of %lld\n", seconds,
              static_cast<double>(batches) * points / seconds, static_cast<long long>(rows),
              static_cast<long long>(batches) * points);
  std::printf(
      "  writer peak RSS %.1f MiB (VmHWM; largest VmRSS sampled %.1f MiB) [<= 256 MiB]; "
      "the backlog itself %.1f MiB\n",
      hwm_kb / 1024.0, rss_max_kb / 1024.0, static_cast<double>(bytes) / (1 << 20));
  if (held_max >= 0) {
    std::printf("  largest metricswriter_held_bytes seen %.1f MiB\n", held_max / (1 << 20));
  }
  std::printf("  'Slow Consumer' in the writer's log: %s\n", slow ? "YES" : "no");
  std::printf("  queue after the drain: %s\n", queue.c_str());
  return rows == int64_t{batches} * points && !slow && drained ? 0 : 1;
}
