// The OTLP/JSON decoder against the spellings real exporters use, and against bad input.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "metricswriter/otlp_json.h"

namespace {

std::string Wrap(const std::string& metric) {
  return R"({"resourceMetrics":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"svc"}}]},"scopeMetrics":[{"scope":{"name":"lib","version":"1.2"},"metrics":[)" +
         metric + "]}]}]}";
}

mw::Batch MustDecode(const std::string& body) {
  mw::JsonDecoder d;
  mw::Batch b;
  auto s = d.Decode(body, &b);
  INFO(s.error().message);
  REQUIRE(s.ok());
  return b;
}

std::string DecodeError(const std::string& body) {
  mw::JsonDecoder d;
  mw::Batch b;
  auto s = d.Decode(body, &b);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().kind == common::ErrorKind::kInvalid);
  return s.error().message;
}

}  // namespace

TEST_CASE("JSON sum with integers as strings and as numbers", "[json]") {
  auto b = MustDecode(Wrap(
      R"({"name":"requests","unit":"1","sum":{"aggregationTemporality":2,"isMonotonic":true,"dataPoints":[
        {"startTimeUnixNano":"1700000000000000000","timeUnixNano":"1700000001000000000","asInt":"9007199254740993"},
        {"startTimeUnixNano":1700000000000000000,"timeUnixNano":1700000002000000000,"asInt":42,"attributes":[{"key":"b","value":{"boolValue":true}},{"key":"a","value":{"intValue":"7"}}]}]}})"));
  REQUIRE(b.numbers.size() == 2);
  CHECK(b.numbers[0].int_value == 9007199254740993LL);  // beyond 2^53: exact from a string
  CHECK(b.numbers[0].time == 1700000001000000000LL);
  CHECK(b.numbers[1].int_value == 42);
  CHECK(b.numbers[1].start_time == 1700000000000000000LL);
  const auto s = b.SeriesAt(b.numbers[1].series);
  CHECK(s.type == mw::MetricType::kSum);
  CHECK(s.temporality == mw::Temporality::kCumulative);
  CHECK(s.monotonic);
  CHECK(s.attributes == R"({"a":7,"b":true})");  // sorted by key
  CHECK(b.resources[s.resource] == R"({"service.name":"svc"})");
  CHECK(b.scopes[s.scope].name == "lib");
  CHECK(b.scopes[s.scope].version == "1.2");
}

TEST_CASE("JSON doubles as whole numbers or null or NaN and infinity strings", "[json]") {
  auto b = MustDecode(Wrap(R"({"name":"g","gauge":{"dataPoints":[
        {"timeUnixNano":"1","asDouble":3},{"timeUnixNano":"2","asDouble":null},
        {"timeUnixNano":"3","asDouble":"NaN"},{"timeUnixNano":"4","asDouble":"Infinity"},
        {"timeUnixNano":"5","asDouble":"-Infinity"},{"timeUnixNano":"6","asDouble":2.5e-3}]}})"));
  REQUIRE(b.numbers.size() == 6);
  CHECK(b.numbers[0].value == 3.0);
  CHECK_FALSE(b.numbers[0].int_value.has_value());
  CHECK(std::isnan(b.numbers[1].value));
  CHECK(std::isnan(b.numbers[2].value));
  CHECK(b.numbers[3].value == INFINITY);
  CHECK(b.numbers[4].value == -INFINITY);
  CHECK(b.numbers[5].value == 2.5e-3);
}

TEST_CASE("JSON enum names and snake_case and unknown fields in any order", "[json]") {
  auto b = MustDecode(
      R"({"extra":1,"resource_metrics":[{"scope_metrics":[{"metrics":[{"sum":{"data_points":[{"as_double":1.5,"time_unix_nano":"10","unknown":{"x":[1]}}],"is_monotonic":false,"aggregation_temporality":"AGGREGATION_TEMPORALITY_DELTA"},"unit":"s","name":"late.name"}],"scope":{"name":"s"}}],"resource":{}}]})");
  REQUIRE(b.numbers.size() == 1);
  const auto s = b.SeriesAt(b.numbers[0].series);
  CHECK(s.name == "late.name");  // name after the data still names the series
  CHECK(s.unit == "s");
  CHECK(s.temporality == mw::Temporality::kDelta);
  CHECK_FALSE(s.monotonic);
  CHECK(b.resources[s.resource] == "{}");
  CHECK(s.attributes == "{}");
}

TEST_CASE("JSON attribute values of every AnyValue kind", "[json]") {
  auto b = MustDecode(
      Wrap(R"({"name":"g","gauge":{"dataPoints":[{"timeUnixNano":"1","asDouble":1,"attributes":[
      {"key":"s","value":{"stringValue":"x\"y"}},{"key":"d","value":{"doubleValue":2}},
      {"key":"i","value":{"intValue":-3}},{"key":"bytes","value":{"bytesValue":"AAEC"}},
      {"key":"arr","value":{"arrayValue":{"values":[{"stringValue":"a"},{"intValue":"1"},{}]}}},
      {"key":"kv","value":{"kvlistValue":{"values":[{"key":"z","value":{"boolValue":false}},{"key":"y","value":{"doubleValue":"NaN"}}]}}},
      {"key":"empty","value":{}},{"key":"nul","value":{"stringValue":"a\u0000b"}}]}]}})"));
  REQUIRE(b.numbers.size() == 1);
  CHECK(b.Attributes(0) ==
        "{\"arr\":[\"a\",1,null],\"bytes\":\"AAEC\",\"d\":2.0,\"empty\":null,\"i\":-3,"
        "\"kv\":{\"y\":\"NaN\",\"z\":false},\"nul\":\"a\xEF\xBF\xBD"
        "b\",\"s\":\"x\\\"y\"}");
  CHECK(b.nul_replacements == 1);
}

TEST_CASE("JSON attributes nest, a later oneof member wins, and points do not share lists",
          "[json]") {
  auto b = MustDecode(Wrap(
      R"({"name":"g","gauge":{"dataPoints":[{"timeUnixNano":"1","asDouble":1,"attributes":[
      {"key":"n","value":{"kvlistValue":{"values":[
        {"key":"b","value":{"kvlistValue":{"values":[{"key":"d","value":{"intValue":1}},
          {"key":"c","value":{"arrayValue":{"values":[{"kvlistValue":{"values":[
            {"key":"f","value":{"boolValue":true}},{"key":"e","value":{}}]}}]}}}]}}},
        {"key":"a","value":{"stringValue":"x"}}]}}},
      {"key":"o","value":{"stringValue":"first","intValue":7}},
      {"key":"p","value":{"arrayValue":{"values":[{"intValue":1}]},"boolValue":true}},
      {"key":"q","value":{"kvlistValue":{"values":[{"key":"z","value":{"intValue":1}}]},"stringValue":"s"}},
      {"key":"r","value":{"arrayValue":{"values":[{"intValue":1}],"values":[{"intValue":2},{"intValue":3}]}}},
      {"key":"t","value":{"stringValue":"s","kvlistValue":{"values":[{"key":"z","value":{"intValue":1}}]}}},
      {"key":"u","value":{"arrayValue":{"values":null}}},{"key":"v","value":{"kvlistValue":null}}]},
      {"timeUnixNano":"2","asDouble":2,"attributes":[{"key":"only","value":{"intValue":5}}]},
      {"timeUnixNano":"3","asDouble":3}]}})"));
  REQUIRE(b.numbers.size() == 3);
  CHECK(b.Attributes(b.numbers[0].series) ==
        R"({"n":{"a":"x","b":{"c":[{"e":null,"f":true}],"d":1}},"o":7,"p":true,"q":"s",)"
        R"("r":[2,3],"t":{"z":1},"u":[],"v":{}})");
  CHECK(b.Attributes(b.numbers[1].series) == R"({"only":5})");
  CHECK(b.Attributes(b.numbers[2].series) == "{}");
}

TEST_CASE("JSON histogram and exponential histogram and summary", "[json]") {
  auto b = MustDecode(Wrap(R"(
    {"name":"h","histogram":{"aggregationTemporality":1,"dataPoints":[{"timeUnixNano":"5","count":"6","sum":10.5,"min":0.5,"max":4,"bucketCounts":["1",2,3],"explicitBounds":[1,2.5]}]}},
    {"name":"e","exponentialHistogram":{"aggregationTemporality":2,"dataPoints":[{"timeUnixNano":"5","count":4,"scale":-2,"zeroCount":"1","zeroThreshold":0,"positive":{"offset":-3,"bucketCounts":[1,2]},"negative":{"bucketCounts":["1"]}}]}},
    {"name":"q","summary":{"dataPoints":[{"timeUnixNano":"5","count":"3","sum":6,"quantileValues":[{"quantile":0.5,"value":2},{"quantile":1,"value":3}]}]}})"));
  REQUIRE(b.histograms.size() == 1);
  CHECK(b.histograms[0].count == 6);
  CHECK(b.histograms[0].sum == 10.5);
  CHECK(b.histograms[0].max == 4.0);
  CHECK(b.histograms[0].counts == std::vector<int64_t>{1, 2, 3});
  CHECK(b.histograms[0].bounds == std::vector<double>{1, 2.5});
  CHECK(b.SeriesAt(b.histograms[0].series).temporality == mw::Temporality::kDelta);
  REQUIRE(b.exp_histograms.size() == 1);
  const auto& x = b.exp_histograms[0];
  CHECK(x.scale == -2);
  CHECK(x.zero_count == 1);
  CHECK(x.positive_offset == -3);
  CHECK(x.positive_counts == std::vector<int64_t>{1, 2});
  CHECK(x.negative_offset == 0);
  CHECK(x.negative_counts == std::vector<int64_t>{1});
  CHECK_FALSE(x.sum.has_value());
  REQUIRE(b.summaries.size() == 1);
  CHECK(b.summaries[0].quantiles == std::vector<double>{0.5, 1});
  CHECK(b.summaries[0].quantile_values == std::vector<double>{2, 3});
  CHECK(b.PointCount() == 3);
}

TEST_CASE("JSON bad input names the fault and the place", "[json]") {
  CHECK_THAT(DecodeError(""), Catch::Contains("JSON"));
  CHECK_THAT(DecodeError("{\"resourceMetrics\":[{"), Catch::Contains("JSON"));
  CHECK_THAT(DecodeError("[1,2]"), Catch::Contains("expected an object"));
  CHECK_THAT(DecodeError("{\"resourceMetrics\":{}}"),
             Catch::Contains("resourceMetrics: expected an array"));
  CHECK_THAT(DecodeError(Wrap(R"({"name":"x","sum":{"dataPoints":[{"asInt":"12x"}]}})")),
             Catch::Contains("resourceMetrics[0].scopeMetrics[0].metrics[0].sum.dataPoints[0]"
                             ".asInt: expected an integer string"));
  CHECK_THAT(DecodeError(Wrap(R"({"name":"x","gauge":{"dataPoints":[{"timeUnixNano":-1}]}})")),
             Catch::Contains("negative"));
  CHECK_THAT(
      DecodeError(
          Wrap(R"({"name":"x","gauge":{"dataPoints":[{"timeUnixNano":"9223372036854775808"}]}})")),
      Catch::Contains("2^63-1"));
  CHECK_THAT(DecodeError(Wrap(R"({"name":"x","sum":{"aggregationTemporality":9}})")),
             Catch::Contains("temporality"));
  CHECK_THAT(
      DecodeError(Wrap(
          R"({"name":"x","gauge":{"dataPoints":[{"attributes":[{"key":"k","value":{"bytesValue":"!!"}}]}]}})")),
      Catch::Contains("base64"));
  CHECK_THAT(DecodeError("{\"a\":\"\xff\"}"), Catch::Contains("UTF-8"));
}

TEST_CASE("JSON truncated at every byte never crashes and never succeeds wrongly", "[json]") {
  std::string full =
      Wrap(R"({"name":"g","gauge":{"dataPoints":[{"timeUnixNano":"1","asDouble":1}]}})");
  mw::JsonDecoder d;
  mw::Batch b;
  for (size_t n = 0; n < full.size(); ++n) {
    auto s = d.Decode(std::string_view(full).substr(0, n), &b);
    INFO(n);
    CHECK_FALSE(s.ok());
  }
  REQUIRE(d.Decode(full, &b).ok());
  CHECK(b.numbers.size() == 1);
}

// Issue 35: a 100 KB document nested 50,000 levels deep overflowed the intake thread's stack.
// Every way a document can nest (an unknown member, an attribute's kvlistValue and arrayValue,
// arrays of arrays) is refused with the path's first and last levels, not followed.
TEST_CASE("JSON nested deeper than the bound is refused, however it nests", "[json]") {
  const int levels = 50'000;
  auto repeat = [](const std::string& s, int n) {
    std::string out;
    out.reserve(s.size() * static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) out += s;
    return out;
  };
  SECTION("an unknown member of arrays") {
    const std::string body =
        R"({"resourceMetrics":[],"x":)" + repeat("[", levels) + repeat("]", levels) + "}";
    CHECK(body.size() > 100'000);
    auto e = DecodeError(body);
    CHECK(e.find("nested deeper than 256 levels") != std::string::npos);
    CHECK(e.find("levels)") != std::string::npos);  // the middle of the path is left out
    CHECK(e.size() < 400);
  }
  SECTION("an unknown member of objects") {
    auto e = DecodeError(R"({"x":)" + repeat(R"({"a":)", levels) + "1" + repeat("}", levels) + "}");
    CHECK(e.find("nested deeper than 256 levels") != std::string::npos);
  }
  SECTION("an attribute's kvlistValue") {
    const std::string open = R"({"kvlistValue":{"values":[{"key":"k","value":)";
    const std::string value =
        repeat(open, levels / 4) + R"({"intValue":1})" + repeat("}]}}", levels / 4);
    auto e = DecodeError(Wrap(
        R"({"name":"g","gauge":{"dataPoints":[{"timeUnixNano":"1","asInt":1,"attributes":[{"key":"a","value":)" +
        value + "}]}]}}"));
    CHECK(e.find("nested deeper than 256 levels") != std::string::npos);
    CHECK(e.rfind("JSON: resourceMetrics[0].scopeMetrics[0].metrics[0].gauge", 0) == 0);
  }
  SECTION("an attribute's arrayValue") {
    const std::string value = repeat(R"({"arrayValue":{"values":[)", levels / 3) +
                              R"({"intValue":1})" + repeat("]}}", levels / 3);
    auto e = DecodeError(Wrap(
        R"({"name":"g","gauge":{"dataPoints":[{"timeUnixNano":"1","asInt":1,"attributes":[{"key":"a","value":)" +
        value + "}]}]}}"));
    CHECK(e.find("nested deeper than 256 levels") != std::string::npos);
  }
}

TEST_CASE("JSON attributes nested 40 deep are stored", "[json]") {
  std::string value = R"({"intValue":1})";
  for (int i = 0; i < 40; ++i)
    value = R"({"kvlistValue":{"values":[{"key":"k","value":)" + value + "}]}}";
  auto b = MustDecode(Wrap(
      R"({"name":"g","gauge":{"dataPoints":[{"timeUnixNano":"1","asInt":1,"attributes":[{"key":"a","value":)" +
      value + "}]}]}}"));
  REQUIRE(b.numbers.size() == 1);
  CHECK(b.Attributes(b.numbers[0].series).size() > 40 * 6);
}
