// metricswriter benchmark: N batches of 20 points pre-published to API_METRICS (OTLP/JSON, then
// separately OTLP protobuf), drained by the real metricswriter binary into PostgreSQL; compared
// with a raw binary COPY of the same rows into the same table in the same run.
//
//   metricswriter_bench [--batches N] [--points P]     (defaults 200000 and 20)
//                       [--writer PATH]...              (other builds to drain the same load)
//   metricswriter_bench --cpu-only [--batches N]       (the writer's decode/encode CPU only)
//
// With --writer (e.g. the binary of the commit before a change), each format's load is drained
// by this build's metricswriter and then by each other one in turn, in the same run, on the same
// stack: the figures are comparable, as the machine's load at the time allows. Each writer gets
// the same batches under its own message ids; the series exist after the first drain.
//
// Starts its own nats-server + PostgreSQL (TestStack). Prints batches/s,
// points/s, the ratio to the raw COPY and the writer's peak RSS (VmHWM). After each drain the
// queue must be drained with nothing left behind (tests/support/queue_judge.h), or it stops.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/nats_async.h"
#include "common/nats_client.h"
#include "common/pg_conn.h"
#include "common/timefmt.h"
#include "metricswriter/copy_encoder.h"
#include "metricswriter/fingerprint.h"
#include "metricswriter/otlp_json.h"
#include "metricswriter/otlp_proto.h"
#include "metricswriter/proto/otlp_metrics.pb.h"
#include "platformctl/nats_admin.h"
#include "tests/support/nats_cluster.h"
#include "tests/support/queue_judge.h"
#include "tests/support/test_stack.h"

namespace {

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// One batch: `points` gauge points of host h, cpu 0..points-1 (so 100 hosts x points series).
std::string JsonBody(int i, int points, int64_t t) {
  std::string ts = "\"" + std::to_string(t) + "\"";
  std::string s =
      R"({"resourceMetrics":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"bench"}},{"key":"host.name","value":{"stringValue":"host-)" +
      std::to_string(i % 100) +
      R"("}}]},"scopeMetrics":[{"scope":{"name":"bench","version":"1"},"metrics":[{"name":"system.cpu.utilization","unit":"1","gauge":{"dataPoints":[)";
  for (int p = 0; p < points; ++p) {
    if (p > 0) s += ',';
    s += R"({"attributes":[{"key":"cpu","value":{"intValue":)" + std::to_string(p) +
         R"(}},{"key":"state","value":{"stringValue":"user"}}],"startTimeUnixNano":)" + ts +
         R"(,"timeUnixNano":)" + ts + R"(,"asDouble":)" +
         std::to_string((i * 7 + p) % 1000 / 1000.0) + "}";
  }
  return s + "]}}]}]}]}";
}

std::string ProtoBody(int i, int points, int64_t t) {
  mw::otlp::ExportMetricsServiceRequest req;
  auto* rm = req.add_resource_metrics();
  auto* a = rm->mutable_resource()->add_attributes();
  a->set_key("service.name");
  a->mutable_value()->set_string_value("bench");
  a = rm->mutable_resource()->add_attributes();
  a->set_key("host.name");
  a->mutable_value()->set_string_value("host-" + std::to_string(i % 100));
  auto* sm = rm->add_scope_metrics();
  sm->mutable_scope()->set_name("bench");
  sm->mutable_scope()->set_version("1");
  auto* m = sm->add_metrics();
  m->set_name("system.cpu.utilization");
  m->set_unit("1");
  for (int p = 0; p < points; ++p) {
    auto* dp = m->mutable_gauge()->add_data_points();
    auto* kv = dp->add_attributes();
    kv->set_key("cpu");
    kv->mutable_value()->set_int_value(p);
    kv = dp->add_attributes();
    kv->set_key("state");
    kv->mutable_value()->set_string_value("user");
    dp->set_start_time_unix_nano(static_cast<uint64_t>(t));
    dp->set_time_unix_nano(static_cast<uint64_t>(t));
    dp->set_as_double((i * 7 + p) % 1000 / 1000.0);
  }
  return req.SerializeAsString();
}

void Publish(common::NatsClient& nats, int batches, int points, bool proto,
             const std::string& tag) {
  std::atomic<int64_t> in_flight{0}, failed{0};
  auto pub = common::AsyncPublisher::Create(nats, [&](uint64_t, const common::Status& s) {
    if (!s.ok()) ++failed;
    --in_flight;
  });
  if (!pub.ok()) throw std::runtime_error(pub.error().message);
  auto t0 = Clock::now();
  const int64_t now = common::NowUnixNs();
  for (int i = 0; i < batches; ++i) {
    while (in_flight > 3000) std::this_thread::sleep_for(std::chrono::microseconds(200));
    common::OutMessage m;
    m.subject = "api.metrics.tenant-" + std::to_string(i % 4);
    m.data = proto ? ProtoBody(i, points, now) : JsonBody(i, points, now);
    m.msg_id = tag + "-" + std::to_string(i);
    m.headers.emplace_back("Content-Type", proto ? "application/x-protobuf" : "application/json");
    ++in_flight;
    if (auto s = (*pub)->Publish(m, static_cast<uint64_t>(i)); !s.ok()) {
      --in_flight;
      throw std::runtime_error(s.error().message);
    }
  }
  while (in_flight > 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  std::printf("  published %d %s batches in %.1f s (%lld failed)\n", batches,
              proto ? "protobuf" : "JSON", Since(t0), static_cast<long long>(failed.load()));
}

int64_t Count(common::pg::PgConn& pg, const std::string& sql) {
  auto r = pg.Query(sql);
  if (!r.ok()) return -1;
  return std::stoll(std::string(r->Get(0, 0)));
}

// CPU seconds (user + system) of a process; with_children adds its children that ended and
// were reaped (the postmaster's ended backends).
double CpuSeconds(pid_t pid, bool with_children) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream fields(stat.substr(close + 2));
  std::vector<std::string> f{std::istream_iterator<std::string>(fields), {}};
  // Fields from the state (3rd in proc(5)) on: utime is the 14th, so f[11].
  if (f.size() < 15) return 0;
  double ticks = std::stod(f[11]) + std::stod(f[12]);
  if (with_children) ticks += std::stod(f[13]) + std::stod(f[14]);
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// Where the CPU goes: the stack's nats-server and PostgreSQL (postmaster, ended backends and
// the live ones), read from /proc.
struct CpuProbe {
  pid_t nats = -1;
  pid_t postmaster = -1;

  explicit CpuProbe(const testsupport::TestStack& stack)
      : nats(stack.nats(1).pid()), postmaster(stack.pg().pid()) {}
  double Nats() const { return nats > 0 ? CpuSeconds(nats, false) : 0; }
  double Postgres() const {
    if (postmaster <= 0) return 0;
    double sum = CpuSeconds(postmaster, true);
    for (const auto& e : std::filesystem::directory_iterator("/proc")) {
      const std::string name = e.path().filename();
      if (name.find_first_not_of("0123456789") != std::string::npos) continue;
      std::ifstream in(e.path() / "stat");
      std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      auto close = stat.rfind(')');
      if (close == std::string::npos) continue;
      std::istringstream fields(stat.substr(close + 2));
      std::string state;
      pid_t ppid = 0;
      fields >> state >> ppid;
      if (ppid == postmaster) sum += CpuSeconds(std::stoi(name), false);
    }
    return sum;
  }
};

struct Run {
  double seconds = 0;
  long rss_kb = 0;
};

// port: the writer's METRICS_LISTEN port, one per writer (an older build twice could not bind
// the port the writer before it had just served).
Run Drain(testsupport::TestStack& stack, common::NatsClient& nats, common::pg::PgConn& pg,
          const std::string& writer_bin, int port, int batches, const std::string& log) {
  std::map<std::string, std::string> env = {
      {"NATS_URL", stack.Env("NATS_URL")},
      {"DATABASE_URL", stack.Env("DATABASE_URL")},
      {"METRICS_LISTEN", "127.0.0.1:" + std::to_string(port)},
      {"LOG_LEVEL", "warn"},
  };
  // METRICSWRITER_* settings of the bench's own environment reach the writer (tuning runs).
  for (char** e = environ; *e != nullptr; ++e) {
    std::string kv = *e;
    if (kv.rfind("METRICSWRITER_", 0) == 0)
      env[kv.substr(0, kv.find('='))] = kv.substr(kv.find('=') + 1);
  }
  const CpuProbe probe(stack);
  const double nats0 = probe.Nats(), pg0 = probe.Postgres();
  auto t0 = Clock::now();
  testsupport::ChildProcess writer({writer_bin}, env, log);
  Run r;
  // Progress from the writer's own counter: a count(*) every 100 ms would compete with it.
  const std::string scrape = "curl -s http://127.0.0.1:" + std::to_string(port) +
                             "/metrics | awk '/^metricswriter_batches_stored_total /{print $2}'";
  while (true) {
    std::string v = testsupport::Capture(scrape);
    if (!v.empty() && std::stod(v) >= batches) break;
    if (!writer.Running()) {  // e.g. its METRICS_LISTEN port taken meanwhile by another process
      throw std::runtime_error(writer_bin + " exited during the drain; its log: " + log);
    }
    r.rss_kb = std::max(r.rss_kb, testsupport::ProcStatusKb(writer.pid(), "VmHWM:"));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (Since(t0) > 1800) throw std::runtime_error("drain took longer than 30 min");
  }
  r.seconds = Since(t0);
  std::printf(
      "  CPU during the drain: writer %.1f s, nats-server %.1f s, postgres %.1f s (%.1f s wall)\n",
      CpuSeconds(writer.pid(), false), probe.Nats() - nats0, probe.Postgres() - pg0, r.seconds);
  if (Count(pg, "SELECT count(*) FROM metrics.batches") != batches) {
    throw std::runtime_error("stored batches differ from published");
  }
  // The queue judged as every test judges it (drained, nothing left behind), outside the timed
  // drain: the next load must start on an empty queue.
  std::string queue = "no reading";
  if (!testsupport::WaitFor(
          [&] {
            auto q = platformctl::nats_admin::ReadStream(nats, "API_METRICS");
            if (!q) return false;
            queue = testsupport::judge::Describe(*q);
            return testsupport::judge::Drained(*q) && testsupport::judge::LeftBehind(*q) == 0;
          },
          30'000)) {
    throw std::runtime_error("after the drain: " + queue);
  }
  r.rss_kb = std::max(r.rss_kb, testsupport::ProcStatusKb(writer.pid(), "VmHWM:"));
  // Where the time went: the store thread's transactions against the whole drain.
  std::string m =
      testsupport::Capture("curl -s http://127.0.0.1:" + std::to_string(port) + "/metrics");
  for (const char* name :
       {"metricswriter_transaction_duration_seconds_sum",
        "metricswriter_transaction_duration_seconds_count", "metricswriter_group_batches_sum"}) {
    auto at = m.find(std::string(name) + " ");
    if (at != std::string::npos) {
      std::printf(
          "  %s %s\n", name,
          m.substr(at + std::strlen(name) + 1, m.find('\n', at) - at - std::strlen(name) - 1)
              .c_str());
    }
  }
  writer.Signal(SIGTERM);
  writer.Wait(10'000);
  return r;
}

std::string Hex(const std::string& bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

// The same rows as the writer stored (same series ids, times and values), COPYed raw in groups
// of 500 batches (the writer's group) on one connection.
double RawCopy(const testsupport::TestStack& stack, common::pg::PgConn& pg, int batches,
               int points) {
  // The series ids the writer gave these series (by fingerprint), so the index sees the same
  // keys: the same 2,000 series, not a few ids that keep every insert on the same pages.
  auto rows = pg.Query("SELECT encode(fingerprint, 'hex'), series_id FROM metrics.series");
  if (!rows.ok()) throw std::runtime_error(rows.error().message);
  std::unordered_map<std::string, int64_t> ids;
  for (int r = 0; r < rows->rows(); ++r) {
    ids[std::string(rows->Get(r, 0))] = std::stoll(std::string(rows->Get(r, 1)));
  }
  std::string scratch;
  mw::JsonDecoder dec;
  std::vector<std::string> payloads;
  mw::CopyEncoder enc;
  const int64_t now = common::NowUnixNs();
  for (int g = 0; g < batches; g += 500) {
    enc.Begin();
    for (int i = g; i < std::min(batches, g + 500); ++i) {
      mw::Batch b;
      (void)dec.Decode(JsonBody(i, points, now), &b);
      std::vector<int64_t> sid(b.series.size());
      const std::string tenant = "tenant-" + std::to_string(i % 4);
      for (size_t s = 0; s < sid.size(); ++s) {
        sid[s] = ids.at(Hex(mw::SeriesFingerprint(tenant, b, s, &scratch).Bytes()));
      }
      enc.Add(b, sid);
    }
    enc.Finish();
    payloads.push_back(enc.payload(mw::kNumberTable));
  }
  const CpuProbe probe(stack);
  const double pg0 = probe.Postgres();
  auto t0 = Clock::now();
  for (const auto& p : payloads) {
    if (!pg.Exec("BEGIN").ok() || !pg.CopyIn(mw::CopyStatement(mw::kNumberTable), p).ok() ||
        !pg.Exec("COMMIT").ok()) {
      throw std::runtime_error("raw COPY failed");
    }
  }
  const double seconds = Since(t0);
  std::printf("  CPU during the raw COPY: postgres %.1f s (%.1f s wall)\n", probe.Postgres() - pg0,
              seconds);
  return seconds;
}

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// The writer's own work per batch without NATS and PostgreSQL, as thread CPU time (so other
// load on the machine hardly moves it): decode, series fingerprints and their id lookup (all
// hits after the first round, as in a steady state), binary COPY encoding in groups of 500.
// Decodes, fingerprints and encodes `bodies` as the writer does; returns the bytes read. Apart
// from CpuOnly so `valgrind --tool=callgrind --toggle-collect='*Pipeline*'` counts only this.
[[gnu::noinline]] size_t Pipeline(const std::vector<std::string>& bodies, bool proto) {
  mw::JsonDecoder json;
  mw::ProtoDecoder pb;
  mw::CopyEncoder enc;
  std::unordered_map<mw::Fingerprint, int64_t, mw::FingerprintHash> ids;
  std::string scratch;
  size_t bytes = 0;
  const size_t n = bodies.size();
  for (size_t g = 0; g < n; g += 500) {
    std::vector<mw::Batch> group(std::min<size_t>(500, n - g));
    enc.Begin();
    for (size_t k = 0; k < group.size(); ++k) {
      const std::string& body = bodies[g + k];
      bytes += body.size();
      auto st = proto ? pb.Decode(body, &group[k]) : json.Decode(body, &group[k]);
      if (!st.ok()) throw std::runtime_error(st.error().message);
      const std::string tenant = "tenant-" + std::to_string((g + k) % 4);
      std::vector<int64_t> sid(group[k].series.size());
      for (size_t s = 0; s < sid.size(); ++s) {
        auto fp = mw::SeriesFingerprint(tenant, group[k], s, &scratch);
        sid[s] = ids.emplace(fp, static_cast<int64_t>(ids.size()) + 1).first->second;
      }
      enc.Add(group[k], sid);
    }
    enc.Finish();
  }
  return bytes;
}

void CpuOnly(int batches, int points) {
  const int64_t now = common::NowUnixNs();
  for (bool proto : {false, true}) {
    std::vector<std::string> bodies;
    bodies.reserve(static_cast<size_t>(batches));
    for (int i = 0; i < batches; ++i) {
      bodies.push_back(proto ? ProtoBody(i, points, now) : JsonBody(i, points, now));
    }
    const double t0 = ThreadCpuSeconds();
    const size_t bytes = Pipeline(bodies, proto);
    const double cpu = ThreadCpuSeconds() - t0;
    std::printf(
        "%-8s decode + fingerprint + encode: %.1f us/batch CPU (%d batches, %.0f bytes "
        "each)\n",
        proto ? "protobuf" : "JSON", cpu * 1e6 / batches, batches,
        static_cast<double>(bytes) / batches);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // figures appear as they are measured
  int batches = 200'000, points = 20;
  bool cpu_only = false;
  std::vector<std::string> writers = {testsupport::BinaryDir() + "/metricswriter/metricswriter"};
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--cpu-only")) cpu_only = true;
    if (i + 1 >= argc) continue;
    if (!std::strcmp(argv[i], "--writer")) writers.emplace_back(argv[i + 1]);
    if (!std::strcmp(argv[i], "--batches")) batches = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--points")) points = std::atoi(argv[i + 1]);
  }
  if (writers.size() > 7) {  // their ports: base + 5 ... base + 11, within the stack's range
    std::fprintf(stderr, "at most 6 --writer\n");
    return 2;
  }
  if (cpu_only) {
    CpuOnly(batches, points);
    return 0;
  }
  common::NatsLibraryGuard guard;
  testsupport::TestStack stack({"nats", "pg"});
  auto nats = testsupport::InitAndConnect(stack);
  auto pg = common::pg::PgConn::Connect(stack.Env("DATABASE_URL"), {});
  if (!pg.ok()) return 1;
  std::printf("metricswriter bench: %d batches x %d points\n", batches, points);
  for (size_t w = 0; w < writers.size(); ++w)
    std::printf("  writer %zu: %s\n", w, writers[w].c_str());
  double copy_s = 0;
  for (bool proto : {false, true}) {
    for (size_t w = 0; w < writers.size(); ++w) {
      const std::string tag = std::string(proto ? "pb" : "json") + "-w" + std::to_string(w);
      Publish(*nats, batches, points, proto, tag);
      Run r = Drain(stack, *nats, **pg, writers[w], stack.base_port() + 5 + static_cast<int>(w),
                    batches, stack.dir() + "/mw-" + tag + ".log");
      // Every load starts on an empty points table (the day partition and the series stay).
      (void)(*pg)->Exec("TRUNCATE metrics.batches, metrics.number_points");
      if (!proto && w == 0) {
        copy_s = RawCopy(stack, **pg, batches, points);
        (void)(*pg)->Exec("TRUNCATE metrics.number_points");
      }
      double rows = static_cast<double>(batches) * points;
      std::printf(
          "%-8s writer %zu drain %.1f s: %.0f batches/s, %.0f points/s; raw COPY of the same "
          "rows %.1f s (%.0f rows/s); ratio %.2f; writer peak RSS %.1f MiB\n",
          proto ? "protobuf" : "JSON", w, r.seconds, batches / r.seconds, rows / r.seconds, copy_s,
          rows / copy_s, copy_s / r.seconds, r.rss_kb / 1024.0);
    }
  }
  return 0;
}
