// The captured corpus (corpus/captures, from the OpenTelemetry JS SDK's own exporters, see
// corpus/generator): the JSON and protobuf captures of one collection decode to the same points.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <string>

#include "metricswriter/otlp_json.h"
#include "metricswriter/otlp_proto.h"

namespace {

std::string Read(const std::string& name) {
  std::ifstream in(std::string(MW_CORPUS_DIR) + "/" + name, std::ios::binary);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST_CASE("corpus: JSON and protobuf captures of one collection decode to the same points",
          "[corpus]") {
  auto name = GENERATE(as<std::string>{}, "cumulative-1", "cumulative-2", "delta-1", "delta-2",
                       "big-numbers");
  INFO(name);
  mw::JsonDecoder jd;
  mw::ProtoDecoder pd;
  mw::Batch from_json, from_proto;
  auto js = jd.Decode(Read(name + ".json"), &from_json);
  INFO(js.error().message);
  REQUIRE(js.ok());
  auto ps = pd.Decode(Read(name + ".pb"), &from_proto);
  INFO(ps.error().message);
  REQUIRE(ps.ok());
  REQUIRE(from_json.PointCount() > 0);
  // NaN: JSON.stringify writes null, the decoder reads null as NaN, protobuf carries NaN itself.
  CHECK(mw::DescribePoints(from_json) == mw::DescribePoints(from_proto));
  CHECK(from_json.nul_replacements == from_proto.nul_replacements);
}

TEST_CASE("corpus: the cumulative capture holds every kind the JS SDK writes", "[corpus]") {
  mw::JsonDecoder jd;
  mw::Batch b;
  REQUIRE(jd.Decode(Read("cumulative-1.json"), &b).ok());
  CHECK(b.histograms.size() == 1);
  CHECK(b.exp_histograms.size() == 1);
  CHECK(b.nul_replacements == 1);  // the attribute "a\0b"
  bool big = false, nan = false, negative = false;
  for (const auto& p : b.numbers) {
    const auto s = b.SeriesAt(p.series);
    if (p.int_value == (int64_t{1} << 40)) big = true;
    if (s.name == "cpu.temperature" && std::isnan(p.value)) nan = true;
    if (s.name == "queue.depth") {
      negative = p.int_value == -3;
      CHECK_FALSE(s.monotonic);
    }
  }
  CHECK(big);
  CHECK(nan);
  CHECK(negative);
  const auto& h = b.histograms[0];
  CHECK(h.bounds == std::vector<double>{0.01, 0.1, 1, 10});
  CHECK(h.counts == std::vector<int64_t>{1, 1, 1, 1, 1});
  CHECK(h.count == 5);
  CHECK(b.exp_histograms[0].zero_count == 1);
}

TEST_CASE("corpus: doubles as JSON.stringify writes them, integer literals beyond 64 bits too",
          "[corpus]") {
  // The SDK's own JSON export: 2^64 as 18446744073709552000, 1.2345678901234568e20 as
  // 123456789012345680000, sums and bounds the same way (see corpus/generator).
  const std::string json = Read("big-numbers.json");
  REQUIRE(json.find("\"asDouble\":18446744073709552000") != std::string::npos);
  REQUIRE(json.find("\"asDouble\":123456789012345680000") != std::string::npos);
  mw::JsonDecoder jd;
  mw::Batch b;
  auto s = jd.Decode(json, &b);
  INFO(s.error().message);
  REQUIRE(s.ok());
  std::map<std::string, double> gauge;
  for (const auto& p : b.numbers) {
    const auto series = b.SeriesAt(p.series);
    if (series.name != "numbers.gauge") continue;
    const std::string attrs(series.attributes);
    const auto at = attrs.find("\"case\":\"") + 8;
    gauge[attrs.substr(at, attrs.find('"', at) - at)] = p.value;
  }
  CHECK(gauge.at("two64") == 18446744073709551616.0);
  CHECK(gauge.at("js_big") == 1.2345678901234568e20);
  CHECK(gauge.at("below_1e21") == 999999999999999900000.0);
  CHECK(gauge.at("at_1e21") == 1e21);
  CHECK(gauge.at("e300") == 1e300);
  CHECK(gauge.at("max") == std::numeric_limits<double>::max());
  CHECK(gauge.at("minus_max") == -std::numeric_limits<double>::max());
  CHECK(gauge.at("tiny") == std::numeric_limits<double>::denorm_min());
  CHECK(gauge.at("two53_plus_2") == 9007199254740994.0);
  bool whole = false;
  for (const auto& h : b.histograms) {
    if (h.sum == 3 * 18446744073709551616.0) {
      whole = true;
      CHECK(h.min == 18446744073709551616.0);
      CHECK(h.max == 2 * 18446744073709551616.0);
      CHECK(h.bounds == std::vector<double>{18446744073709551616.0, 1e20, 1e300});
    }
  }
  CHECK(whole);
}
