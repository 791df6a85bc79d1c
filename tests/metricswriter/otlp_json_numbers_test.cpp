// The OTLP/JSON decoder reads every number the OTLP/JSON mapping allows, in every numeric field:
// a double field any JSON number (integer literals beyond 64 bits included, as JavaScript's
// JSON.stringify writes every whole double below 1e21), a 64-bit integer field a number or a
// decimal string within its range; outside it the error names the field and the value.
#include <catch2/catch.hpp>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>

#include "metricswriter/otlp_json.h"
#include "metricswriter/otlp_text.h"

namespace {

std::string WrapNumbers(const std::string& metric) {
  return R"({"resourceMetrics":[{"resource":{"attributes":[{"key":"r","value":{"doubleValue":1}}]},"scopeMetrics":[{"scope":{"name":"lib"},"metrics":[)" +
         metric + "]}]}]}";
}

std::string Replace(std::string s, const std::string& value) {
  for (size_t at = s.find('@'); at != std::string::npos; at = s.find('@', at + value.size())) {
    s.replace(at, 1, value);
  }
  return s;
}

bool SameValue(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0 || a == b; }

std::string DoubleText(double d) {
  std::string s;
  mw::text::AppendDouble(s, d);
  return s;
}

const std::string kLargestDoubleAsInteger = "17976931348623157" + std::string(292, '0');

// A spelling of a double and the value it must decode to.
struct Spelling {
  std::string text;
  double value;
};

std::vector<Spelling> DoubleSpellings() {
  return {
      {"18446744073709551616", 18446744073709551616.0},  // 2^64
      {"18446744073709552000", 18446744073709551616.0},  // JSON.stringify(2 ** 64)
      {"1" + std::string(300, '0'), 1e300},
      {"1e+300", 1e300},  // JSON.stringify(1e300)
      {"-0", -0.0},
      {"0", 0.0},
      {"5e-324", std::numeric_limits<double>::denorm_min()},  // JSON.stringify(5e-324)
      {kLargestDoubleAsInteger, DBL_MAX},
      {"1.7976931348623157e+308", DBL_MAX},  // JSON.stringify(Number.MAX_VALUE)
      {"-" + kLargestDoubleAsInteger, -DBL_MAX},
      {"123456789012345680000", 1.2345678901234568e20},  // JSON.stringify(1.2345678901234568e20)
      {"999999999999999900000", 9.999999999999999e20},   // the largest JS writes without exponent
      {"1e+21", 1e21},                                   // the smallest JS writes with one
      {"9007199254740993", 9007199254740992.0},          // 2^53 + 1: rounds to even
      {"-9223372036854775809", -9223372036854775808.0},
      {"0.000001", 1e-6},
      {"1e-7", 1e-7},
      {"2.5E-3", 2.5e-3},
      {"1e400", INFINITY},  // beyond the largest double: as IEEE 754 rounds
      {"-1e400", -INFINITY},
      {"1e-400", 0.0},
      {"\"1e300\"", 1e300},  // protojson also takes a number in a string
      {"\"18446744073709551616\"", 18446744073709551616.0},
      {"\"-0\"", -0.0},
      {"\"Infinity\"", INFINITY},
  };
}

// Where a double sits in a document: a template with @ for the value, and how to read it back.
struct DoubleField {
  std::string name;
  std::string doc;
  std::function<double(const mw::Batch&)> get;
};

std::vector<DoubleField> DoubleFields() {
  auto attr = [](const std::string& text) {
    // {"d":<canonical double>}: the value's text back as a double
    return std::strtod(text.c_str() + 5, nullptr);
  };
  return {
      {"gauge asDouble",
       WrapNumbers(R"({"name":"g","gauge":{"dataPoints":[{"timeUnixNano":"1","asDouble":@}]}})"),
       [](const mw::Batch& b) { return b.numbers.at(0).value; }},
      {"sum asDouble",
       WrapNumbers(
           R"({"name":"s","sum":{"aggregationTemporality":2,"dataPoints":[{"asDouble":@,"timeUnixNano":"1"}]}})"),
       [](const mw::Batch& b) { return b.numbers.at(0).value; }},
      {"histogram sum",
       WrapNumbers(
           R"({"name":"h","histogram":{"dataPoints":[{"count":"1","sum":@,"bucketCounts":[1]}]}})"),
       [](const mw::Batch& b) { return *b.histograms.at(0).sum; }},
      {"histogram min", WrapNumbers(R"({"name":"h","histogram":{"dataPoints":[{"min":@}]}})"),
       [](const mw::Batch& b) { return *b.histograms.at(0).min; }},
      {"histogram max", WrapNumbers(R"({"name":"h","histogram":{"dataPoints":[{"max":@}]}})"),
       [](const mw::Batch& b) { return *b.histograms.at(0).max; }},
      {"histogram explicitBounds",
       WrapNumbers(
           R"({"name":"h","histogram":{"dataPoints":[{"explicitBounds":[0,@],"bucketCounts":[0,0,0]}]}})"),
       [](const mw::Batch& b) { return b.histograms.at(0).bounds.at(1); }},
      {"exponential histogram sum",
       WrapNumbers(R"({"name":"e","exponentialHistogram":{"dataPoints":[{"sum":@}]}})"),
       [](const mw::Batch& b) { return *b.exp_histograms.at(0).sum; }},
      {"exponential histogram min",
       WrapNumbers(R"({"name":"e","exponentialHistogram":{"dataPoints":[{"min":@}]}})"),
       [](const mw::Batch& b) { return *b.exp_histograms.at(0).min; }},
      {"exponential histogram max",
       WrapNumbers(R"({"name":"e","exponentialHistogram":{"dataPoints":[{"max":@}]}})"),
       [](const mw::Batch& b) { return *b.exp_histograms.at(0).max; }},
      {"exponential histogram zeroThreshold",
       WrapNumbers(R"({"name":"e","exponentialHistogram":{"dataPoints":[{"zeroThreshold":@}]}})"),
       [](const mw::Batch& b) { return b.exp_histograms.at(0).zero_threshold; }},
      {"summary sum", WrapNumbers(R"({"name":"q","summary":{"dataPoints":[{"sum":@}]}})"),
       [](const mw::Batch& b) { return b.summaries.at(0).sum; }},
      {"summary quantile",
       WrapNumbers(
           R"({"name":"q","summary":{"dataPoints":[{"quantileValues":[{"quantile":@}]}]}})"),
       [](const mw::Batch& b) { return b.summaries.at(0).quantiles.at(0); }},
      {"summary quantile value",
       WrapNumbers(R"({"name":"q","summary":{"dataPoints":[{"quantileValues":[{"value":@}]}]}})"),
       [](const mw::Batch& b) { return b.summaries.at(0).quantile_values.at(0); }},
      {"point attribute doubleValue",
       WrapNumbers(
           R"({"name":"g","gauge":{"dataPoints":[{"attributes":[{"key":"d","value":{"doubleValue":@}}]}]}})"),
       [attr](const mw::Batch& b) { return attr(std::string(b.Attributes(0))); }},
      {"resource attribute doubleValue",
       R"({"resourceMetrics":[{"resource":{"attributes":[{"key":"d","value":{"doubleValue":@}}]}}]})",
       [attr](const mw::Batch& b) { return attr(b.resources.at(0)); }},
  };
}

}  // namespace

TEST_CASE("JSON: every double field reads every spelling of a JSON number", "[json][numbers]") {
  mw::JsonDecoder d;
  for (const auto& field : DoubleFields()) {
    for (const auto& sp : DoubleSpellings()) {
      INFO(field.name << " = " << sp.text.substr(0, 60));
      mw::Batch b;
      auto s = d.Decode(Replace(field.doc, sp.text), &b);
      INFO(s.error().message);
      REQUIRE(s.ok());
      const double got = field.get(b);
      if (field.name.find("attribute") != std::string::npos) {
        // Attributes keep the canonical text; compare it (±0 and infinity included).
        std::string want = DoubleText(sp.value);
        std::string text = field.name[0] == 'p' ? std::string(b.Attributes(0)) : b.resources[0];
        CHECK(text == "{\"d\":" + want + "}");
      } else {
        CHECK(SameValue(got, sp.value));
        CHECK(std::signbit(got) == std::signbit(sp.value));
      }
    }
  }
}

TEST_CASE("JSON: exemplars and unknown fields may hold any number too", "[json][numbers]") {
  mw::JsonDecoder d;
  for (const auto& sp : DoubleSpellings()) {
    if (sp.text[0] == '"') continue;
    INFO(sp.text.substr(0, 60));
    mw::Batch b;
    auto s = d.Decode(
        Replace(
            WrapNumbers(
                R"({"name":"g","gauge":{"dataPoints":[{"asDouble":1,"exemplars":[{"asDouble":@,"timeUnixNano":"1","filteredAttributes":[{"key":"x","value":{"doubleValue":@}}]}],"future":[@,{"n":@}]}]}})"),
            sp.text),
        &b);
    INFO(s.error().message);
    REQUIRE(s.ok());
    CHECK(b.numbers.size() == 1);
  }
}

// Where an integer sits: template, whether it is unsigned (fixed64) or signed, and read-back.
struct IntField {
  std::string name;
  std::string path;  // what the error message names
  std::string doc;
  bool is_unsigned;  // fixed64 stored in bigint: 0 .. 2^63-1
  std::function<int64_t(const mw::Batch&)> get;
};

std::vector<IntField> IntFields() {
  const std::string m = "resourceMetrics[0].scopeMetrics[0].metrics[0].";
  return {
      {"asInt", m + "sum.dataPoints[0].asInt",
       WrapNumbers(R"({"name":"s","sum":{"dataPoints":[{"asInt":@}]}})"), false,
       [](const mw::Batch& b) { return *b.numbers.at(0).int_value; }},
      {"intValue", m + "gauge.dataPoints[0].attributes[0].value.intValue",
       WrapNumbers(
           R"({"name":"g","gauge":{"dataPoints":[{"attributes":[{"key":"i","value":{"intValue":@}}]}]}})"),
       false,
       [](const mw::Batch& b) { return std::stoll(std::string(b.Attributes(0)).substr(5)); }},
      {"timeUnixNano", m + "gauge.dataPoints[0].timeUnixNano",
       WrapNumbers(R"({"name":"g","gauge":{"dataPoints":[{"timeUnixNano":@}]}})"), true,
       [](const mw::Batch& b) { return b.numbers.at(0).time; }},
      {"startTimeUnixNano", m + "gauge.dataPoints[0].startTimeUnixNano",
       WrapNumbers(R"({"name":"g","gauge":{"dataPoints":[{"startTimeUnixNano":@}]}})"), true,
       [](const mw::Batch& b) { return b.numbers.at(0).start_time; }},
      {"histogram count", m + "histogram.dataPoints[0].count",
       WrapNumbers(R"({"name":"h","histogram":{"dataPoints":[{"count":@}]}})"), true,
       [](const mw::Batch& b) { return b.histograms.at(0).count; }},
      {"bucketCounts", m + "histogram.dataPoints[0].bucketCounts[1]",
       WrapNumbers(R"({"name":"h","histogram":{"dataPoints":[{"bucketCounts":[0,@]}]}})"), true,
       [](const mw::Batch& b) { return b.histograms.at(0).counts.at(1); }},
      {"zeroCount", m + "exponentialHistogram.dataPoints[0].zeroCount",
       WrapNumbers(R"({"name":"e","exponentialHistogram":{"dataPoints":[{"zeroCount":@}]}})"), true,
       [](const mw::Batch& b) { return b.exp_histograms.at(0).zero_count; }},
      {"positive bucketCounts", m + "exponentialHistogram.dataPoints[0].positive.bucketCounts[0]",
       WrapNumbers(
           R"({"name":"e","exponentialHistogram":{"dataPoints":[{"positive":{"bucketCounts":[@]}}]}})"),
       true, [](const mw::Batch& b) { return b.exp_histograms.at(0).positive_counts.at(0); }},
      {"summary count", m + "summary.dataPoints[0].count",
       WrapNumbers(R"({"name":"q","summary":{"dataPoints":[{"count":@}]}})"), true,
       [](const mw::Batch& b) { return b.summaries.at(0).count; }},
  };
}

TEST_CASE("JSON: integer fields take numbers and decimal strings within range", "[json][numbers]") {
  struct Case {
    std::string text;
    int64_t value;
    bool negative;  // not for an unsigned field
  };
  const std::vector<Case> good = {
      {"9223372036854775807", INT64_MAX, false},
      {"\"9223372036854775807\"", INT64_MAX, false},
      {"0", 0, false},
      {"-0", 0, false},
      {"\"0\"", 0, false},
      {"1e3", 1000, false},  // a whole number in any notation, exactly
      {"5.0", 5, false},
      {"12345678901234567.0", 12345678901234567, false},
      {"\"1e18\"", 1'000'000'000'000'000'000, false},
      {"null", 0, false},
      {"-9223372036854775808", INT64_MIN, true},
      {"\"-42\"", -42, true},
  };
  mw::JsonDecoder d;
  for (const auto& field : IntFields()) {
    for (const auto& c : good) {
      if (c.negative && field.is_unsigned) continue;
      INFO(field.name << " = " << c.text);
      mw::Batch b;
      auto s = d.Decode(Replace(field.doc, c.text), &b);
      INFO(s.error().message);
      REQUIRE(s.ok());
      CHECK(field.get(b) == c.value);
    }
  }
}

TEST_CASE("JSON: an integer out of range names the field and the value", "[json][numbers]") {
  struct Case {
    std::string text;
    std::string signed_says;    // in the error for an int64 field
    std::string unsigned_says;  // for a fixed64 stored in bigint
  };
  const std::vector<Case> bad = {
      {"9223372036854775808", "value 9223372036854775808 is out of the 64-bit integer range",
       "value 9223372036854775808 is above 2^63-1"},
      {"\"9223372036854775808\"", "value 9223372036854775808 is out of the 64-bit integer range",
       "value 9223372036854775808 is above 2^63-1"},
      {"18446744073709551616", "value 18446744073709551616 is out of the 64-bit integer range",
       "value 18446744073709551616 is out of the unsigned 64-bit range"},
      {"\"18446744073709551616\"", "value 18446744073709551616 is out of",
       "value 18446744073709551616 is out of the unsigned 64-bit range"},
      {"1e300", "value 1e300 is out of", "value 1e300 is out of"},
      {"1.5", "value 1.5 is not a whole number", "value 1.5 is not a whole number"},
      {"5e-324", "value 5e-324 is not a whole number", "value 5e-324 is not a whole number"},
      {"-1", "", "negative value -1 for an unsigned field"},
      {"\"-1\"", "", "negative value -1 for an unsigned field"},
      {"-9223372036854775809", "value -9223372036854775809 is out of the 64-bit integer range",
       "negative value -9223372036854775809"},
      {"\"12x\"", "expected an integer string, got \"12x\"",
       "expected an unsigned integer string, got \"12x\""},
      {"true", "expected an integer", "expected an unsigned integer"},
  };
  mw::JsonDecoder d;
  for (const auto& field : IntFields()) {
    for (const auto& c : bad) {
      const std::string& says = field.is_unsigned ? c.unsigned_says : c.signed_says;
      if (says.empty()) continue;
      INFO(field.name << " = " << c.text);
      mw::Batch b;
      auto s = d.Decode(Replace(field.doc, c.text), &b);
      REQUIRE_FALSE(s.ok());
      CHECK(s.error().kind == common::ErrorKind::kInvalid);
      CHECK_THAT(s.error().message, Catch::Contains(field.path + ": " + says));
    }
  }
}

TEST_CASE("JSON: 32-bit fields and flags check their range", "[json][numbers]") {
  mw::JsonDecoder d;
  mw::Batch b;
  REQUIRE(
      d.Decode(
           WrapNumbers(
               R"({"name":"e","exponentialHistogram":{"dataPoints":[{"scale":"-2","positive":{"offset":2147483647},"negative":{"offset":-2147483648.0}}]}})"),
           &b)
          .ok());
  CHECK(b.exp_histograms.at(0).scale == -2);
  CHECK(b.exp_histograms.at(0).positive_offset == INT32_MAX);
  CHECK(b.exp_histograms.at(0).negative_offset == INT32_MIN);
  auto err = [&](const std::string& doc) {
    auto s = d.Decode(doc, &b);
    REQUIRE_FALSE(s.ok());
    return s.error().message;
  };
  CHECK_THAT(
      err(WrapNumbers(
          R"({"name":"e","exponentialHistogram":{"dataPoints":[{"positive":{"offset":2147483648}}]}})")),
      Catch::Contains(
          "exponentialHistogram.dataPoints[0].positive.offset: value 2147483648 is out of the "
          "32-bit integer range"));
  CHECK_THAT(err(WrapNumbers(R"({"name":"g","gauge":{"dataPoints":[{"flags":4294967296}]}})")),
             Catch::Contains("gauge.dataPoints[0].flags: value 4294967296 is out of the uint32"));
  REQUIRE(
      d.Decode(WrapNumbers(R"({"name":"g","gauge":{"dataPoints":[{"flags":"4294967295"}]}})"), &b)
          .ok());
  CHECK(b.numbers.at(0).flags == 0xFFFFFFFFu);
  CHECK_THAT(err(WrapNumbers(R"({"name":"s","sum":{"aggregationTemporality":1e300}})")),
             Catch::Contains("sum.aggregationTemporality: value 1e300 is out of"));
}

TEST_CASE("JSON: a value in an error is cut short and made safe", "[json][numbers]") {
  mw::JsonDecoder d;
  mw::Batch b;
  auto s = d.Decode(WrapNumbers(R"({"name":"s","sum":{"dataPoints":[{"asInt":1)" +
                                std::string(500, '0') + "}]}}"),
                    &b);
  REQUIRE_FALSE(s.ok());
  CHECK_THAT(s.error().message, Catch::Contains("asInt: value 1" + std::string(39, '0') +
                                                "... is out of the 64-bit integer range"));
  CHECK(s.error().message.size() < 200);
  s = d.Decode(
      WrapNumbers(R"({"name":"s","sum":{"dataPoints":[{"asInt":"1\r\nX-Evil: \"yes\u0000"}]}})"),
      &b);
  REQUIRE_FALSE(s.ok());
  INFO(s.error().message);
  for (char c : s.error().message) CHECK((c >= 0x20 && c < 0x7f));
  CHECK_THAT(s.error().message, Catch::Contains("got \"1??X-Evil:??yes?\""));
  // A member name from the document, in the path of an error under it.
  s = d.Decode("{\"resourceMetrics\":[],\"x\\r\\ny\":{\"a\":[1,,2]}}", &b);
  REQUIRE_FALSE(s.ok());
  INFO(s.error().message);
  for (char c : s.error().message) CHECK((c >= 0x20 && c < 0x7f));
  CHECK_THAT(s.error().message, Catch::Contains("x??y.a"));
}
