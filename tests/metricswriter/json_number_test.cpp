// JSON number text to doubles and 64-bit integers: every spelling JSON allows, exactly.
#include <catch2/catch.hpp>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "metricswriter/json_number.h"

using mw::json::IntFit;

namespace {

// 1.7976931348623157e308 (the largest double, as printed) written out as an integer.
const std::string kMaxAsInteger = "17976931348623157" + std::string(292, '0');
const std::string k1e300AsInteger = "1" + std::string(300, '0');

bool SameBits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

}  // namespace

TEST_CASE("json number: the grammar of RFC 8259", "[json-number]") {
  for (const char* good : {"0", "-0", "1", "-1", "0.5", "1e5", "1E+5", "1e-5", "-0.0e0",
                           "123456789012345680000", "5e-324", "1.7976931348623157e+308"}) {
    INFO(good);
    CHECK(mw::json::IsNumber(good));
  }
  CHECK(mw::json::IsNumber(kMaxAsInteger));
  for (const char* bad : {"", "-", "+1", "01", "1.", ".5", "1e", "1e+", "0x10", "1 ", " 1", "NaN",
                          "Infinity", "1.5.5", "--1", "1e5e5"}) {
    INFO(bad);
    CHECK_FALSE(mw::json::IsNumber(bad));
  }
}

TEST_CASE("json number: doubles are the nearest double whatever the spelling", "[json-number]") {
  using mw::json::ToDouble;
  CHECK(ToDouble("18446744073709551616") == 18446744073709551616.0);  // 2^64
  CHECK(ToDouble("18446744073709552000") == 18446744073709551616.0);  // JSON.stringify(2**64)
  CHECK(ToDouble(k1e300AsInteger) == 1e300);
  CHECK(ToDouble("1e+300") == 1e300);
  CHECK(ToDouble(kMaxAsInteger) == DBL_MAX);
  CHECK(ToDouble("1.7976931348623157e+308") == DBL_MAX);
  CHECK(ToDouble("-1.7976931348623157e+308") == -DBL_MAX);
  CHECK(ToDouble("5e-324") == std::numeric_limits<double>::denorm_min());
  CHECK(ToDouble("0." + std::string(323, '0') + "5") == std::numeric_limits<double>::denorm_min());
  CHECK(SameBits(ToDouble("-0"), -0.0));
  CHECK(SameBits(ToDouble("-0.0e5"), -0.0));
  CHECK(ToDouble("123456789012345680000") == 1.2345678901234568e20);
  CHECK(ToDouble("999999999999999900000") == 9.999999999999999e20);
  CHECK(ToDouble("1e+21") == 1e21);
  CHECK(ToDouble("1e-7") == 1e-7);
  // Beyond the range of a double: what IEEE 754 rounding gives.
  CHECK(ToDouble("1e400") == INFINITY);
  CHECK(ToDouble("-1" + std::string(400, '0')) == -INFINITY);
  CHECK(SameBits(ToDouble("1e-400"), 0.0));
  CHECK(SameBits(ToDouble("-0.00000000001e-400"), -0.0));
}

TEST_CASE("json number: 64-bit integers exactly, or why not", "[json-number]") {
  int64_t i = 0;
  uint64_t u = 0;
  CHECK(mw::json::ToInt64("9223372036854775807", &i) == IntFit::kOk);
  CHECK(i == INT64_MAX);
  CHECK(mw::json::ToInt64("-9223372036854775808", &i) == IntFit::kOk);
  CHECK(i == INT64_MIN);
  CHECK(mw::json::ToInt64("9223372036854775808", &i) == IntFit::kOutOfRange);
  CHECK(mw::json::ToInt64("-9223372036854775809", &i) == IntFit::kOutOfRange);
  CHECK(mw::json::ToInt64(k1e300AsInteger, &i) == IntFit::kOutOfRange);
  CHECK(mw::json::ToInt64("1e300", &i) == IntFit::kOutOfRange);
  CHECK(mw::json::ToInt64("1e3", &i) == IntFit::kOk);
  CHECK(i == 1000);
  CHECK(mw::json::ToInt64("12345678901234567.0", &i) == IntFit::kOk);  // exact, not via double
  CHECK(i == 12345678901234567);
  CHECK(mw::json::ToInt64("1500e-3", &i) == IntFit::kNotWhole);
  CHECK(mw::json::ToInt64("25e-1", &i) == IntFit::kNotWhole);
  CHECK(mw::json::ToInt64("2500e-3", &i) == IntFit::kNotWhole);
  CHECK(mw::json::ToInt64("2000e-3", &i) == IntFit::kOk);
  CHECK(i == 2);
  CHECK(mw::json::ToInt64("-0", &i) == IntFit::kOk);
  CHECK(i == 0);
  CHECK(mw::json::ToInt64("0.000e999999999999999999999", &i) == IntFit::kOk);
  CHECK(i == 0);
  CHECK(mw::json::ToInt64("5e-324", &i) == IntFit::kNotWhole);
  CHECK(mw::json::ToUint64("18446744073709551615", &u) == IntFit::kOk);
  CHECK(u == UINT64_MAX);
  CHECK(mw::json::ToUint64("18446744073709551616", &u) == IntFit::kOutOfRange);
  CHECK(mw::json::ToUint64("1.8446744073709551615e19", &u) == IntFit::kOk);
  CHECK(u == UINT64_MAX);
  CHECK(mw::json::ToUint64("-1", &u) == IntFit::kNegative);
  CHECK(mw::json::ToUint64("-0.0", &u) == IntFit::kOk);
  CHECK(u == 0);
  CHECK(mw::json::ToUint64(kMaxAsInteger, &u) == IntFit::kOutOfRange);
  CHECK(mw::json::ToUint64("1e99999999999999999999", &u) == IntFit::kOutOfRange);
}

TEST_CASE("json number: excerpts are short and printable", "[json-number]") {
  CHECK(mw::json::Excerpt("123") == "123");
  CHECK(mw::json::Excerpt(kMaxAsInteger) == kMaxAsInteger.substr(0, 40) + "...");
  CHECK(mw::json::Excerpt(std::string("a\r\nb\"\\\x01\xc3\xa9 c", 11)) == "a??b??????c");
}
