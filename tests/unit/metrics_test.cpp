#include "common/metrics.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <set>
#include <thread>
#include "common/lease_keeper.h"
#include "metricswriter/writer_metrics.h"
#include "platformctl/exporter.h"
#include "replayer/replayer_metrics.h"

using namespace common::metrics;

namespace {
bool Has(const std::string& text, const std::string& line) {
  return text.find(line + "\n") != std::string::npos;
}
}  // namespace

TEST_CASE("exposition of counters, gauges and labels", "[metrics]") {
  Registry r;
  auto& sent = r.AddCounter("x_sent_total", "Sends. Resets when the process restarts.",
                            {"process", "class"});
  sent.With({"http://a:1", "5xx"}).Inc(2);
  sent.With({"http://a:1", "4xx"}).Inc();
  auto& held = r.AddGauge("x_held_messages", "Messages held.");
  held.Get().Set(12.5);
  std::string out = r.Expose();
  CHECK(Has(out, "# HELP x_held_messages Messages held."));
  CHECK(Has(out, "# TYPE x_held_messages gauge\nx_held_messages 12.5"));
  CHECK(Has(out, "# HELP x_sent_total Sends. Resets when the process restarts."));
  CHECK(Has(out, "# TYPE x_sent_total counter"));
  // prometheus-cpp writes the labels of a sample in name order.
  CHECK(Has(out, "x_sent_total{class=\"4xx\",process=\"http://a:1\"} 1"));
  CHECK(Has(out, "x_sent_total{class=\"5xx\",process=\"http://a:1\"} 2"));
  // Each family once: HELP and TYPE are not repeated per child.
  CHECK(out.find("# TYPE x_sent_total") == out.rfind("# TYPE x_sent_total"));
}

TEST_CASE("histograms are cumulative with +Inf, sum and count", "[metrics]") {
  Registry r;
  auto& h = r.AddHistogram("x_latency_seconds", "Latency.", {0.1, 1}, {"p"});
  auto& c = h.With({"a"});
  c.Observe(0.05);
  c.Observe(0.1);  // on the bound: le is inclusive
  c.Observe(0.5);
  c.Observe(7);
  std::string out = r.Expose();
  CHECK(Has(out, "x_latency_seconds_bucket{p=\"a\",le=\"0.1\"} 2"));
  CHECK(Has(out, "x_latency_seconds_bucket{p=\"a\",le=\"1\"} 3"));
  CHECK(Has(out, "x_latency_seconds_bucket{p=\"a\",le=\"+Inf\"} 4"));
  CHECK(Has(out, "x_latency_seconds_sum{p=\"a\"} 7.65"));
  CHECK(Has(out, "x_latency_seconds_count{p=\"a\"} 4"));
  CHECK(c.Count() == 4);
  CHECK(c.Sum() == Approx(7.65));
  // A second child of the family gets the same bounds.
  h.With({"b"}).Observe(0.5);
  out = r.Expose();
  CHECK(Has(out, "x_latency_seconds_bucket{p=\"b\",le=\"0.1\"} 0"));
  CHECK(Has(out, "x_latency_seconds_bucket{p=\"b\",le=\"1\"} 1"));
}

TEST_CASE("label values are escaped, help with a line break is refused", "[metrics]") {
  Registry r;
  r.AddGauge("x_g", "A gauge.", {"l"}).With({"a\"b\\c\nd"}).Set(1);
  std::string out = r.Expose();
  CHECK(Has(out, "x_g{l=\"a\\\"b\\\\c\\nd\"} 1"));
  // prometheus-cpp 1.0 writes help as it is: what it cannot write correctly never gets in.
  CHECK_THROWS(r.AddGauge("x_h", "line one\nline two"));
  CHECK_THROWS(r.AddGauge("x_h", "back\\slash"));
  CHECK(out.find("x_h") == std::string::npos);
}

TEST_CASE("bad names and label counts are refused", "[metrics]") {
  Registry r;
  CHECK_THROWS(r.AddCounter("1bad", "x"));
  CHECK_THROWS(r.AddCounter("bad-name", "x"));
  CHECK_THROWS(r.AddCounter("ok_total", "x", {"le"}));
  CHECK_THROWS(r.AddCounter("ok_total", "x", {"__x"}));
  CHECK_THROWS(r.AddCounter("ok_total", "x", {"bad-label"}));
  auto& c = r.AddCounter("ok_total", "x", {"a"});
  CHECK_THROWS(r.AddGauge("ok_total", "again"));
  CHECK_THROWS(c.With({}));
  CHECK_THROWS(c.With({"1", "2"}));
  CHECK_THROWS(r.AddHistogram("h", "x", {1, 0.5}));
  CHECK_THROWS(r.AddHistogram("h", "x", {1, INFINITY}));
}

TEST_CASE("values are written as Prometheus reads them", "[metrics]") {
  Registry r;
  auto& g = r.AddGauge("x_v", "Values.", {"k"});
  g.With({"zero"}).Set(0);
  g.With({"three"}).Set(3);
  g.With({"minus"}).Set(-2);
  g.With({"tenth"}).Set(0.1);
  g.With({"big"}).Set(1e21);
  g.With({"inf"}).Set(INFINITY);
  g.With({"ninf"}).Set(-INFINITY);
  g.With({"nan"}).Set(NAN);
  g.With({"unix"}).Set(1767225600.25);  // a timestamp in seconds keeps its fraction
  std::string out = r.Expose();
  CHECK(Has(out, "x_v{k=\"zero\"} 0"));
  CHECK(Has(out, "x_v{k=\"three\"} 3"));
  CHECK(Has(out, "x_v{k=\"minus\"} -2"));
  CHECK(Has(out, "x_v{k=\"tenth\"} 0.1"));
  CHECK(Has(out, "x_v{k=\"big\"} 1e+21"));
  CHECK(Has(out, "x_v{k=\"inf\"} +Inf"));
  CHECK(Has(out, "x_v{k=\"ninf\"} -Inf"));
  // prometheus-cpp 1.0 spells it "Nan"; Prometheus reads the word in any case.
  CHECK(Has(out, "x_v{k=\"nan\"} Nan"));
  CHECK(Has(out, "x_v{k=\"unix\"} 1767225600.25"));
}

TEST_CASE("a counter only goes up, also under concurrent increments", "[metrics]") {
  Registry r;
  auto& c = r.AddCounter("x_total", "x").Get();
  c.Inc(-5);
  c.Inc(NAN);
  CHECK(c.Value() == 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) c.Inc();
    });
  }
  for (auto& t : threads) t.join();
  CHECK(c.Value() == 40000);
}

TEST_CASE("gauges go up and down", "[metrics]") {
  Registry r;
  auto& g = r.AddGauge("x_level", "x").Get();
  g.Inc();
  g.Inc(4);
  g.Dec(2);
  CHECK(g.Value() == 3);
  g.Set(-1);
  CHECK(g.Value() == -1);
}

TEST_CASE("collectors run before each exposition", "[metrics]") {
  Registry r;
  auto& g = r.AddGauge("x_read", "x").Get();
  int calls = 0;
  r.AddCollector([&] { g.Set(++calls); });
  CHECK(Has(r.Expose(), "x_read 1"));
  CHECK(Has(r.Expose(), "x_read 2"));
}

TEST_CASE("registering a family again returns it, another shape is refused", "[metrics]") {
  Registry r;
  auto& a = r.AddCounter("things_total", "Things.", {"kind"});
  a.With({"x"}).Inc();
  auto& b = r.AddCounter("things_total", "Things again.", {"kind"});
  CHECK(&a == &b);
  CHECK(&a.With({"x"}) == &b.With({"x"}));
  CHECK(b.With({"x"}).Value() == 1);
  CHECK_THROWS(r.AddGauge("things_total", "Things.", {"kind"}));
  CHECK_THROWS(r.AddCounter("things_total", "Things.", {"other"}));
  // The first registration's help stays, and the family is written once.
  std::string out = r.Expose();
  CHECK(Has(out, "# HELP things_total Things."));
  CHECK(out.find("Things again.") == std::string::npos);
}

TEST_CASE("a family with no child yet is not written", "[metrics]") {
  Registry r;
  r.AddCounter("x_failures_total", "Failures.", {"reason"});
  CHECK(r.Expose().find("x_failures_total") == std::string::npos);
}

// Prometheus' rate() takes a counter's drop for a restart: the help of every counter the
// services register says that it counts since the process started.
TEST_CASE("every counter of the services says it resets on restart", "[metrics]") {
  Registry r;
  replayer::ReplayerMetrics replayer(r);
  mw::WriterMetrics writer(r);
  platformctl::StreamGauges exporter(r);
  int counters = 0;
  for (const auto& f : r.Families()) {
    INFO(f.name << ": " << f.help);
    CHECK(ValidMetricName(f.name));
    CHECK_FALSE(f.help.empty());
    if (f.type != 'c') continue;
    ++counters;
    CHECK(f.name.size() > 6);
    CHECK(f.name.substr(f.name.size() - 6) == "_total");
    CHECK_THAT(f.help, Catch::Contains("restart"));
  }
  CHECK(counters >= 19);  // 9 replayer, 9 metricswriter, 1 exporter
}

// Issue 36: a series that appears only after its first event reads "no data" in a rate() panel
// or an increase() alert, not 0. Every family of the services has a series from the start,
// but for the two gauges whose 0 would be a claim (down, no batch route).
TEST_CASE("every counter and gauge of the services is exported from the start", "[metrics]") {
  Registry r;
  replayer::ReplayerMetrics replayer(r);
  replayer.Preset({"http://umami-1:3000", "http://umami-2:3000"}, 1 << 20);
  mw::WriterMetrics writer(r);
  common::LeaseKeeper::RegisterMetrics(r, "replayer");
  common::LeaseKeeper::RegisterMetrics(r, "metricswriter");
  const std::string out = r.Expose();
  const std::set<std::string> asked_first = {"replayer_umami_process_up",
                                             "replayer_umami_batch_route"};
  for (const auto& f : r.Families()) {
    if (asked_first.count(f.name) != 0) continue;
    INFO(f.name);
    const std::string sample = "\n" + f.name + (f.type == 'h' ? "_count" : "");
    CHECK((out.find(sample + "{") != std::string::npos ||
           out.find(sample + " ") != std::string::npos));
  }
  CHECK(Has(out, "metricswriter_dead_lettered_total{reason=\"db_rejected\"} 0"));
  CHECK(Has(out, "metricswriter_points_stored_total{type=\"gauge\"} 0"));
  CHECK(Has(out, "metricswriter_database_retries_total{kind=\"retryable\"} 0"));
  CHECK(Has(out, "replayer_events_dead_lettered_total{reason=\"failed_4_times\"} 0"));
  CHECK(Has(out, "replayer_send_failures_total{class=\"5xx\",process=\"http://umami-2:3000\"} 0"));
  CHECK(Has(out, "replayer_held_bytes_limit 1048576"));
  CHECK(Has(out, "replayer_leader 0"));
  CHECK(Has(out, "metricswriter_leadership_changes_total 0"));
}

TEST_CASE("process_resident_memory_bytes reads this process's resident size", "[metrics]") {
  Registry r;
  AddProcessMetrics(r);
  const std::string text = r.Expose();
  REQUIRE(text.find("# TYPE process_resident_memory_bytes gauge\n") != std::string::npos);
  const auto at = text.find("\nprocess_resident_memory_bytes ");
  REQUIRE(at != std::string::npos);
  const double rss = std::stod(text.substr(at + 31));
  // A test binary holds at least a megabyte and far less than a terabyte.
  CHECK(rss > 1e6);
  CHECK(rss < 1e12);
}
