// The captured corpus (corpus/captures, from the OpenTelemetry JS SDK's own exporters, see
// corpus/generator): the JSON and protobuf captures of one collection decode to the same points.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
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
  auto name = GENERATE(as<std::string>{}, "cumulative-1", "cumulative-2", "delta-1", "delta-2");
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
