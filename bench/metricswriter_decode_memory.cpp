// How much memory the metricswriter's decoders take for one huge batch (issue 14): the heap at
// its peak during the decode and what the decoded batch keeps, beside the body's own size.
// Two measures: every operator new counted (libprotobuf's and simdjson's buffers too, reserved
// or not), and the resident memory the decode added (VmHWM in a forked child, so only the pages
// actually touched count). No NATS, no PostgreSQL.
//
//   metricswriter_decode_memory [--points 250000]
#include <malloc.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "metricswriter/fingerprint.h"
#include "metricswriter/otlp_json.h"
#include "metricswriter/otlp_proto.h"
#include "metricswriter/proto/otlp_metrics.pb.h"

namespace {
std::atomic<long> g_now{0}, g_peak{0};
}  // namespace

void* operator new(size_t n) {
  void* p = std::malloc(n == 0 ? 1 : n);
  if (p == nullptr) throw std::bad_alloc();
  const long now = g_now += static_cast<long>(malloc_usable_size(p));
  long peak = g_peak;
  while (now > peak && !g_peak.compare_exchange_weak(peak, now)) {
  }
  return p;
}
void operator delete(void* p) noexcept {
  if (p == nullptr) return;
  g_now -= static_cast<long>(malloc_usable_size(p));
  std::free(p);
}
void operator delete(void* p, size_t) noexcept { operator delete(p); }
void* operator new[](size_t n) { return operator new(n); }
void operator delete[](void* p) noexcept { operator delete(p); }
void operator delete[](void* p, size_t) noexcept { operator delete(p); }

namespace {

std::string Proto(int points, bool attributes) {
  mw::otlp::ExportMetricsServiceRequest req;
  auto* rm = req.add_resource_metrics();
  auto* a = rm->mutable_resource()->add_attributes();
  a->set_key("service.name");
  a->mutable_value()->set_string_value("bench");
  auto* m = rm->add_scope_metrics()->add_metrics();
  m->set_name("system.cpu.utilization");
  m->set_unit("1");
  for (int p = 0; p < points; ++p) {
    auto* dp = m->mutable_gauge()->add_data_points();
    if (attributes) {
      auto* kv = dp->add_attributes();
      kv->set_key("cpu");
      kv->mutable_value()->set_int_value(p);
    }
    dp->set_start_time_unix_nano(1'700'000'000'000'000'000ULL);
    dp->set_time_unix_nano(1'700'000'000'000'000'000ULL + static_cast<uint64_t>(p));
    dp->set_as_double(p * 0.001);
  }
  return req.SerializeAsString();
}

std::string Json(int points, bool attributes) {
  std::string s =
      R"({"resourceMetrics":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"bench"}}]},"scopeMetrics":[{"metrics":[{"name":"system.cpu.utilization","unit":"1","gauge":{"dataPoints":[)";
  for (int p = 0; p < points; ++p) {
    if (p > 0) s += ',';
    s += R"({"startTimeUnixNano":"1700000000000000000","timeUnixNano":")" +
         std::to_string(1'700'000'000'000'000'000LL + p) + R"(","asDouble":)" +
         std::to_string(p * 0.001);
    if (attributes)
      s += R"(,"attributes":[{"key":"cpu","value":{"intValue":")" + std::to_string(p) + R"("}}])";
    s += "}";
  }
  return s + "]}}]}]}]}";
}

long StatusKb(const char* field) {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return -1;
  char line[256];
  long kb = -1;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    if (std::strncmp(line, field, std::strlen(field)) == 0)
      kb = std::atol(line + std::strlen(field));
  }
  std::fclose(f);
  return kb;
}

// Free memory back to the system and the high-water mark down to what is resident now.
long ResetHwmKb() {
  malloc_trim(0);
  if (FILE* f = std::fopen("/proc/self/clear_refs", "w")) {
    std::fputs("5", f);
    std::fclose(f);
  }
  return StatusKb("VmRSS:");
}

void Measure(const char* what, const std::string& body, bool proto) {
  // In a child, so the high-water mark starts at what is resident now.
  std::fflush(stdout);
  const pid_t child = fork();
  if (child < 0) std::exit(1);
  if (child > 0) {
    int status = 0;
    waitpid(child, &status, 0);
    return;
  }
  const long hwm0 = ResetHwmKb();
  const long base = g_now;
  g_peak = base;
  auto t0 = std::chrono::steady_clock::now();
  mw::Batch b;
  long kept = 0;
  {
    mw::ProtoDecoder pd;
    mw::JsonDecoder jd;
    auto s = proto ? pd.Decode(body, &b) : jd.Decode(body, &b);
    if (!s.ok()) {
      std::printf("%s: %s\n", what, s.error().message.c_str());
      std::exit(1);
    }
    // The writer's fingerprints are part of what it holds per batch.
    std::vector<mw::Fingerprint> fps(b.series.size());
    std::string scratch;
    for (size_t i = 0; i < fps.size(); ++i) fps[i] = mw::SeriesFingerprint("t", b, i, &scratch);
    kept = g_now - base;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double size = static_cast<double>(body.size());
  const double rss = static_cast<double>(StatusKb("VmHWM:") - hwm0) * 1024;
  std::printf(
      "%-33s %6.2f MB: heap peak %6.1f MB (%4.1fx), resident peak +%6.1f MB (%4.1fx); the "
      "batch and its fingerprints %5.1f MB (%4.1fx); %.2f s\n",
      what, size / 1e6, static_cast<double>(g_peak - base) / 1e6,
      static_cast<double>(g_peak - base) / size, rss / 1e6, rss / size,
      static_cast<double>(kept) / 1e6, static_cast<double>(kept) / size, secs);
  std::fflush(stdout);
  _exit(0);
}

}  // namespace

int main(int argc, char** argv) {
  int points = 250'000;
  for (int i = 1; i + 1 < argc; ++i) {
    if (!std::strcmp(argv[i], "--points")) points = std::atoi(argv[i + 1]);
  }
  std::printf("metricswriter decode memory: one batch of %d gauge points\n", points);
  for (bool attributes : {false, true}) {
    const std::string p = Proto(points, attributes), j = Json(points, attributes);
    Measure(attributes ? "protobuf, an attribute per point" : "protobuf, no attributes", p, true);
    Measure(attributes ? "JSON, an attribute per point" : "JSON, no attributes", j, false);
  }
  return 0;
}
