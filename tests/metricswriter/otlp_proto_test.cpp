// The OTLP protobuf decoder: every point kind, fields in any order, and bad bytes.
#include <catch2/catch.hpp>

#include <random>
#include <string>

#include "metricswriter/otlp_proto.h"
#include "metricswriter/otlp_wire.h"
#include "metricswriter/proto/otlp_metrics.pb.h"

namespace pb = mw::otlp;

namespace {

pb::ExportMetricsServiceRequest Sample() {
  pb::ExportMetricsServiceRequest req;
  auto* rm = req.add_resource_metrics();
  auto* ra = rm->mutable_resource()->add_attributes();
  ra->set_key("service.name");
  ra->mutable_value()->set_string_value("svc");
  auto* sm = rm->add_scope_metrics();
  sm->mutable_scope()->set_name("lib");
  sm->mutable_scope()->set_version("1.2");
  auto* sum = sm->add_metrics();
  sum->set_name("requests");
  sum->set_unit("1");
  sum->mutable_sum()->set_is_monotonic(true);
  sum->mutable_sum()->set_aggregation_temporality(pb::AGGREGATION_TEMPORALITY_CUMULATIVE);
  auto* np = sum->mutable_sum()->add_data_points();
  np->set_start_time_unix_nano(1700000000000000000ULL);
  np->set_time_unix_nano(1700000001000000000ULL);
  np->set_as_int(9007199254740993LL);
  auto* kv = np->add_attributes();
  kv->set_key("b");
  kv->mutable_value()->set_bool_value(true);
  kv = np->add_attributes();
  kv->set_key("a");
  kv->mutable_value()->set_int_value(7);
  auto* h = sm->add_metrics();
  h->set_name("latency");
  h->mutable_histogram()->set_aggregation_temporality(pb::AGGREGATION_TEMPORALITY_DELTA);
  auto* hp = h->mutable_histogram()->add_data_points();
  hp->set_time_unix_nano(5);
  hp->set_count(6);
  hp->set_sum(10.5);
  hp->set_max(4);
  hp->add_bucket_counts(1);
  hp->add_bucket_counts(2);
  hp->add_bucket_counts(3);
  hp->add_explicit_bounds(1);
  hp->add_explicit_bounds(2.5);
  auto* e = sm->add_metrics();
  e->set_name("exp");
  auto* ep = e->mutable_exponential_histogram()->add_data_points();
  ep->set_time_unix_nano(5);
  ep->set_count(4);
  ep->set_scale(-2);
  ep->set_zero_count(1);
  ep->mutable_positive()->set_offset(-3);
  ep->mutable_positive()->add_bucket_counts(1);
  ep->mutable_positive()->add_bucket_counts(2);
  ep->mutable_negative()->add_bucket_counts(1);
  auto* q = sm->add_metrics();
  q->set_name("q");
  auto* qp = q->mutable_summary()->add_data_points();
  qp->set_time_unix_nano(5);
  qp->set_count(3);
  qp->set_sum(6);
  auto* qv = qp->add_quantile_values();
  qv->set_quantile(0.5);
  qv->set_value(2);
  return req;
}

}  // namespace

TEST_CASE("protobuf: every point kind decodes", "[proto]") {
  mw::ProtoDecoder d;
  mw::Batch b;
  REQUIRE(d.Decode(Sample().SerializeAsString(), &b).ok());
  REQUIRE(b.numbers.size() == 1);
  CHECK(b.numbers[0].int_value == 9007199254740993LL);
  CHECK(b.numbers[0].time == 1700000001000000000LL);
  const auto s = b.SeriesAt(b.numbers[0].series);
  CHECK(s.attributes == R"({"a":7,"b":true})");
  CHECK(s.monotonic);
  CHECK(s.temporality == mw::Temporality::kCumulative);
  CHECK(b.resources[s.resource] == R"({"service.name":"svc"})");
  REQUIRE(b.histograms.size() == 1);
  CHECK(b.histograms[0].counts == std::vector<int64_t>{1, 2, 3});
  CHECK(b.histograms[0].sum == 10.5);
  CHECK_FALSE(b.histograms[0].min.has_value());
  CHECK(b.histograms[0].max == 4.0);
  REQUIRE(b.exp_histograms.size() == 1);
  CHECK(b.exp_histograms[0].positive_offset == -3);
  CHECK(b.exp_histograms[0].scale == -2);
  REQUIRE(b.summaries.size() == 1);
  CHECK(b.summaries[0].quantile_values == std::vector<double>{2});
}

TEST_CASE("protobuf: fields in any order give the same batch", "[proto]") {
  // A data point whose value (field 6) comes before its times (2, 3) and attributes (7): two
  // serialized halves concatenated parse as one message.
  pb::NumberDataPoint value_only;
  value_only.set_as_int(5);
  pb::NumberDataPoint rest;
  rest.set_time_unix_nano(99);
  rest.add_attributes()->set_key("k");
  pb::Gauge g;
  std::string point = value_only.SerializeAsString() + rest.SerializeAsString();
  // Gauge.data_points = field 1, length-delimited.
  std::string gauge = std::string("\x0a", 1) + static_cast<char>(point.size()) + point;
  pb::Metric m;
  m.set_name("late");
  std::string metric = std::string("\x2a", 1) + static_cast<char>(gauge.size()) + gauge;
  metric += m.SerializeAsString();  // name (field 1) after the gauge (field 5)
  std::string scope = std::string("\x12", 1) + static_cast<char>(metric.size()) + metric;
  std::string rm = std::string("\x12", 1) + static_cast<char>(scope.size()) + scope;
  std::string body = std::string("\x0a", 1) + static_cast<char>(rm.size()) + rm;
  mw::ProtoDecoder d;
  mw::Batch b;
  auto st = d.Decode(body, &b);
  INFO(st.error().message);
  REQUIRE(st.ok());
  REQUIRE(b.numbers.size() == 1);
  CHECK(b.numbers[0].int_value == 5);
  CHECK(b.numbers[0].time == 99);
  CHECK(b.SeriesAt(0).name == "late");
  CHECK(b.Attributes(0) == R"({"k":null})");
}

TEST_CASE("protobuf: bad bytes name the byte", "[proto]") {
  mw::ProtoDecoder d;
  mw::Batch b;
  auto s = d.Decode(std::string("\x0a\x05"
                                "ab",
                                4),
                    &b);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().kind == core::ErrorKind::kInvalid);
  CHECK(s.error().message ==
        "protobuf parse error at byte 0: field 1: length 5 runs past the end of its message");
  s = d.Decode(std::string("\x0a\x02\x0a\x85", 4), &b);  // inner length varint cut short
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message == "protobuf parse error at byte 3: truncated varint");
  s = d.Decode("garbage that is not protobuf at all", &b);
  REQUIRE_FALSE(s.ok());
  CHECK_THAT(s.error().message, Catch::StartsWith("protobuf parse error"));
  s = d.Decode(std::string("\x0f", 1), &b);  // wire type 7
  REQUIRE_FALSE(s.ok());
  CHECK_THAT(s.error().message, Catch::Contains("invalid wire type 7"));
}

TEST_CASE("protobuf: a time above 2^63-1 is refused", "[proto]") {
  auto req = Sample();
  req.mutable_resource_metrics(0)
      ->mutable_scope_metrics(0)
      ->mutable_metrics(0)
      ->mutable_sum()
      ->mutable_data_points(0)
      ->set_time_unix_nano(1ULL << 63);
  mw::ProtoDecoder d;
  mw::Batch b;
  auto s = d.Decode(req.SerializeAsString(), &b);
  REQUIRE_FALSE(s.ok());
  CHECK_THAT(s.error().message,
             Catch::Contains("metric requests: timeUnixNano 9223372036854775808 is above 2^63-1"));
}

TEST_CASE("protobuf: truncated and corrupted bodies never crash", "[proto]") {
  std::string full = Sample().SerializeAsString();
  mw::ProtoDecoder d;
  mw::Batch b;
  int failed = 0;
  for (size_t n = 0; n < full.size(); ++n) {
    auto s = d.Decode(std::string_view(full).substr(0, n), &b);
    if (!s.ok()) {
      ++failed;
      CHECK_THAT(s.error().message, Catch::StartsWith("protobuf parse error"));
    }
  }
  CHECK(failed > static_cast<int>(full.size()) / 2);  // most cuts land inside a field
  std::mt19937 rng(7);
  for (int i = 0; i < 2000; ++i) {
    std::string bad = full;
    for (int k = 0; k < 3; ++k) bad[rng() % bad.size()] = static_cast<char>(rng());
    (void)d.Decode(bad, &b);
  }
  REQUIRE(d.Decode(full, &b).ok());
  CHECK(b.PointCount() == 4);
}

TEST_CASE("wire walker: UTF-8 validation", "[proto]") {
  CHECK(mw::wire::ValidUtf8("plain"));
  CHECK(mw::wire::ValidUtf8("\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80"));
  CHECK_FALSE(mw::wire::ValidUtf8("\xC3"));
  CHECK_FALSE(mw::wire::ValidUtf8("\xC0\xAF"));          // overlong
  CHECK_FALSE(mw::wire::ValidUtf8("\xED\xA0\x80"));      // surrogate
  CHECK_FALSE(mw::wire::ValidUtf8("\xF4\x90\x80\x80"));  // above U+10FFFF
  CHECK_FALSE(mw::wire::ValidUtf8("\xFF"));
}
