// The captured corpus (JS SDK exporters, JSON and protobuf) through the real metricswriter into
// PostgreSQL, read back point by point: every value, time, attribute, resource and scope.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "metricswriter/otlp_json.h"
#include "metricswriter/otlp_proto.h"
#include "tests/metricswriter/harness.h"

namespace {

std::string Read(const std::string& name) {
  std::ifstream in(std::string(MW_CORPUS_DIR) + "/" + name, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string D(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%.17g", d);
  return buf;
}
core::pg::Param OptD(const std::optional<double>& d) {
  return d ? core::pg::Param(D(*d)) : std::nullopt;
}
template <typename T>
std::string Arr(const std::vector<T>& v) {
  std::string s = "{";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i > 0) s += ',';
    if constexpr (std::is_same_v<T, double>) {
      s += D(v[i]);
    } else {
      s += std::to_string(v[i]);
    }
  }
  return s + "}";
}

// The series columns of a point, as parameters $1..$11.
std::vector<core::pg::Param> SeriesParams(const std::string& tenant, const mw::Batch& b,
                                          const mw::PointHead& p) {
  const auto s = b.SeriesAt(p.series);
  const auto& sc = b.scopes[s.scope];
  return {tenant,
          std::string(s.name),
          mw::MetricTypeName(s.type),
          std::string(s.unit),
          mw::TemporalityName(s.temporality),
          s.monotonic ? "t" : "f",
          b.resources[s.resource],
          sc.name,
          sc.version,
          sc.attributes,
          std::string(s.attributes),
          std::to_string(p.start_time),
          std::to_string(p.time),
          std::to_string(p.flags)};
}

constexpr const char* kSeriesWhere =
    " JOIN metrics.series s USING (series_id) WHERE s.tenant = $1 AND s.name = $2 AND s.type = $3"
    " AND s.unit = $4 AND s.temporality = $5 AND s.monotonic = $6::boolean"
    " AND s.resource = $7::jsonb AND s.scope_name = $8 AND s.scope_version = $9"
    " AND s.scope_attributes = $10::jsonb AND s.attributes = $11::jsonb"
    " AND p.start_time_unix_nano = $12::bigint AND p.time_unix_nano = $13::bigint"
    " AND p.flags = $14::int";

// How many stored rows match each decoded point exactly (1 expected for each).
void ExpectStored(mwtest::Harness& h, const std::string& tenant, const mw::Batch& b) {
  for (const auto& p : b.numbers) {
    auto params = SeriesParams(tenant, b, p);
    params.push_back(D(p.value));
    params.push_back(p.int_value ? core::pg::Param(std::to_string(*p.int_value)) : std::nullopt);
    INFO(b.SeriesAt(p.series).name << " " << b.Attributes(p.series));
    CHECK(h.Count(std::string("SELECT count(*) FROM metrics.number_points p") + kSeriesWhere +
                      " AND p.value = $15::float8 AND p.value_int IS NOT DISTINCT FROM $16::bigint",
                  params) == 1);
  }
  for (const auto& p : b.histograms) {
    auto params = SeriesParams(tenant, b, p);
    for (auto v : {core::pg::Param(std::to_string(p.count)), OptD(p.sum), OptD(p.min), OptD(p.max),
                   core::pg::Param(Arr(p.bounds)), core::pg::Param(Arr(p.counts))}) {
      params.push_back(v);
    }
    INFO(b.SeriesAt(p.series).name);
    CHECK(h.Count(std::string("SELECT count(*) FROM metrics.histogram_points p") + kSeriesWhere +
                      " AND p.count = $15::bigint AND p.sum IS NOT DISTINCT FROM $16::float8"
                      " AND p.min IS NOT DISTINCT FROM $17::float8"
                      " AND p.max IS NOT DISTINCT FROM $18::float8"
                      " AND p.bounds = $19::float8[] AND p.counts = $20::bigint[]",
                  params) == 1);
  }
  for (const auto& p : b.exp_histograms) {
    auto params = SeriesParams(tenant, b, p);
    for (auto v :
         {core::pg::Param(std::to_string(p.count)), OptD(p.sum), OptD(p.min), OptD(p.max),
          core::pg::Param(std::to_string(p.scale)), core::pg::Param(std::to_string(p.zero_count)),
          core::pg::Param(D(p.zero_threshold)), core::pg::Param(std::to_string(p.positive_offset)),
          core::pg::Param(Arr(p.positive_counts)),
          core::pg::Param(std::to_string(p.negative_offset)),
          core::pg::Param(Arr(p.negative_counts))}) {
      params.push_back(v);
    }
    INFO(b.SeriesAt(p.series).name);
    CHECK(h.Count(std::string("SELECT count(*) FROM metrics.exp_histogram_points p") +
                      kSeriesWhere +
                      " AND p.count = $15::bigint AND p.sum IS NOT DISTINCT FROM $16::float8"
                      " AND p.min IS NOT DISTINCT FROM $17::float8"
                      " AND p.max IS NOT DISTINCT FROM $18::float8 AND p.scale = $19::int"
                      " AND p.zero_count = $20::bigint AND p.zero_threshold = $21::float8"
                      " AND p.positive_offset = $22::int AND p.positive_counts = $23::bigint[]"
                      " AND p.negative_offset = $24::int AND p.negative_counts = $25::bigint[]",
                  params) == 1);
  }
  for (const auto& p : b.summaries) {
    auto params = SeriesParams(tenant, b, p);
    for (auto v : {core::pg::Param(std::to_string(p.count)), core::pg::Param(D(p.sum)),
                   core::pg::Param(Arr(p.quantiles)), core::pg::Param(Arr(p.quantile_values))}) {
      params.push_back(v);
    }
    CHECK(h.Count(std::string("SELECT count(*) FROM metrics.summary_points p") + kSeriesWhere +
                      " AND p.count = $15::bigint AND p.sum = $16::float8"
                      " AND p.quantiles = $17::float8[] AND p.quantile_values = $18::float8[]",
                  params) == 1);
  }
}

}  // namespace

TEST_CASE("the corpus is stored and reads back point by point", "[integration]") {
  mwtest::Harness h;
  // The captures carry the time they were made: keep every day of the next ten years.
  auto writer = h.StartWriter(0, {{"METRICS_RETENTION_DAYS", "3650"}});
  const std::vector<std::string> names = {"cumulative-1", "cumulative-2", "delta-1", "delta-2",
                                          "big-numbers"};
  const std::string summary =
      R"({"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"name":"q","summary":{"dataPoints":[{"timeUnixNano":")" +
      std::to_string(mwtest::NowNs()) +
      R"(","count":"3","sum":6,"quantileValues":[{"quantile":0.5,"value":2},{"quantile":1,"value":3}]}]}}]}]}]})";
  for (const auto& n : names) {
    h.Publish("json", Read(n + ".json"), "json-" + n, "application/json");
    h.Publish("proto", Read(n + ".pb"), "proto-" + n, "application/x-protobuf");
  }
  h.Publish("json", summary, "summary-1");
  REQUIRE(h.WaitCount("SELECT count(*) FROM metrics.batches", 11, 20'000) == 11);

  mw::JsonDecoder jd;
  mw::ProtoDecoder pd;
  int64_t points = 0;
  for (const auto& n : names) {
    INFO(n);
    mw::Batch j, p;
    REQUIRE(jd.Decode(Read(n + ".json"), &j).ok());
    REQUIRE(pd.Decode(Read(n + ".pb"), &p).ok());
    ExpectStored(h, "json", j);
    ExpectStored(h, "proto", p);
    points += static_cast<int64_t>(j.PointCount() + p.PointCount());
  }
  mw::Batch s;
  REQUIRE(jd.Decode(summary, &s).ok());
  ExpectStored(h, "json", s);
  points += 1;
  CHECK(h.Count("SELECT (SELECT count(*) FROM metrics.number_points) + "
                "(SELECT count(*) FROM metrics.histogram_points) + "
                "(SELECT count(*) FROM metrics.exp_histogram_points) + "
                "(SELECT count(*) FROM metrics.summary_points)") == points);
  // JSON and protobuf give the same series rows (only the tenant differs).
  CHECK(h.Count("SELECT count(*) FROM metrics.series WHERE tenant = 'json' AND name <> 'q'") ==
        h.Count("SELECT count(*) FROM metrics.series WHERE tenant = 'proto'"));
  // "a\0b" in an attribute: stored with U+FFFD, and counted (one per capture that has it).
  CHECK(h.Count("SELECT count(*) FROM metrics.series WHERE attributes->>'weird' = "
                "'a' || chr(65533) || 'b'") == 2);
  CHECK(h.Metric(0, "metricswriter_nul_replacements_total") == 4);
  CHECK(h.Metric(0, "metricswriter_points_stored_total", "type=\"histogram\"") > 0);
  CHECK(h.Metric(0, "metricswriter_points_stored_total", "type=\"exponential_histogram\"") > 0);
  CHECK(h.ReadDlq().empty());
}
