#include "common/metrics.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <thread>

using namespace core::metrics;

TEST_CASE("exposition of counters, gauges and labels", "[metrics]") {
  Registry r;
  auto& sent = r.AddCounter("x_sent_total", "Sends. Resets when the process restarts.",
                            {"process", "class"});
  sent.With({"http://a:1", "5xx"}).Inc(2);
  sent.With({"http://a:1", "4xx"}).Inc();
  auto& held = r.AddGauge("x_held_messages", "Messages held.");
  held.Get().Set(12.5);
  std::string out = r.Expose();
  CHECK(out ==
        "# HELP x_held_messages Messages held.\n"
        "# TYPE x_held_messages gauge\n"
        "x_held_messages 12.5\n"
        "# HELP x_sent_total Sends. Resets when the process restarts.\n"
        "# TYPE x_sent_total counter\n"
        "x_sent_total{process=\"http://a:1\",class=\"4xx\"} 1\n"
        "x_sent_total{process=\"http://a:1\",class=\"5xx\"} 2\n");
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
  CHECK(out.find("x_latency_seconds_bucket{p=\"a\",le=\"0.1\"} 2\n") != std::string::npos);
  CHECK(out.find("x_latency_seconds_bucket{p=\"a\",le=\"1\"} 3\n") != std::string::npos);
  CHECK(out.find("x_latency_seconds_bucket{p=\"a\",le=\"+Inf\"} 4\n") != std::string::npos);
  CHECK(out.find("x_latency_seconds_sum{p=\"a\"} 7.65\n") != std::string::npos);
  CHECK(out.find("x_latency_seconds_count{p=\"a\"} 4\n") != std::string::npos);
}

TEST_CASE("label values and help text are escaped", "[metrics]") {
  Registry r2;
  r2.AddGauge("x_g", "line one\nback\\slash", {"l"}).With({"a\"b\\c\nd"}).Set(1);
  std::string out = r2.Expose();
  CHECK(out.find("# HELP x_g line one\\nback\\\\slash\n") != std::string::npos);
  CHECK(out.find("x_g{l=\"a\\\"b\\\\c\\nd\"} 1\n") != std::string::npos);
}

TEST_CASE("bad names and label counts are refused", "[metrics]") {
  Registry r;
  CHECK_THROWS(r.AddCounter("1bad", "x"));
  CHECK_THROWS(r.AddCounter("bad-name", "x"));
  CHECK_THROWS(r.AddCounter("ok_total", "x", {"le"}));
  CHECK_THROWS(r.AddCounter("ok_total", "x", {"__x"}));
  auto& c = r.AddCounter("ok_total", "x", {"a"});
  CHECK_THROWS(r.AddGauge("ok_total", "again"));
  CHECK_THROWS(c.With({}));
  CHECK_THROWS(c.With({"1", "2"}));
  CHECK_THROWS(r.AddHistogram("h", "x", {1, 0.5}));
}

TEST_CASE("values format as Prometheus reads them", "[metrics]") {
  CHECK(FormatValue(0) == "0");
  CHECK(FormatValue(3) == "3");
  CHECK(FormatValue(-2) == "-2");
  CHECK(FormatValue(0.1) == "0.1");
  CHECK(FormatValue(1e21) == "1e+21");
  CHECK(FormatValue(INFINITY) == "+Inf");
  CHECK(FormatValue(-INFINITY) == "-Inf");
  CHECK(FormatValue(NAN) == "NaN");
  CHECK(std::stod(FormatValue(1.0 / 3)) == 1.0 / 3);
}

TEST_CASE("a counter only goes up, also under concurrent increments", "[metrics]") {
  Registry r;
  auto& c = r.AddCounter("x_total", "x").Get();
  c.Inc(-5);
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

TEST_CASE("collectors run before each exposition", "[metrics]") {
  Registry r;
  auto& g = r.AddGauge("x_read", "x").Get();
  int calls = 0;
  r.AddCollector([&] { g.Set(++calls); });
  CHECK(r.Expose().find("x_read 1\n") != std::string::npos);
  CHECK(r.Expose().find("x_read 2\n") != std::string::npos);
}

TEST_CASE("registering a family again returns it, another shape is refused", "[metrics]") {
  core::metrics::Registry r;
  auto& a = r.AddCounter("things_total", "Things.", {"kind"});
  a.With({"x"}).Inc();
  auto& b = r.AddCounter("things_total", "Things again.", {"kind"});
  CHECK(&a == &b);
  CHECK(b.With({"x"}).Value() == 1);
  CHECK_THROWS(r.AddGauge("things_total", "Things.", {"kind"}));
  CHECK_THROWS(r.AddCounter("things_total", "Things.", {"other"}));
}
