#include "metricswriter/json_number.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>

namespace mw::json {
namespace {

bool Digit(char c) { return c >= '0' && c <= '9'; }

// A JSON number taken apart: sign, integer digits, fraction digits, exponent (saturated far
// beyond anything a double or an integer can use, so a 30-digit exponent cannot overflow).
struct Parts {
  bool negative = false;
  std::string_view whole;     // integer part, as written
  std::string_view fraction;  // after the '.', as written
  int64_t exponent = 0;
};

constexpr int64_t kExponentCap = 1'000'000'000;

Parts Split(std::string_view s) {
  Parts p;
  size_t i = 0;
  if (i < s.size() && s[i] == '-') {
    p.negative = true;
    ++i;
  }
  size_t start = i;
  while (i < s.size() && Digit(s[i])) ++i;
  p.whole = s.substr(start, i - start);
  if (i < s.size() && s[i] == '.') {
    start = ++i;
    while (i < s.size() && Digit(s[i])) ++i;
    p.fraction = s.substr(start, i - start);
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    bool neg = false;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
    int64_t e = 0;
    for (; i < s.size() && Digit(s[i]); ++i) e = std::min(kExponentCap, e * 10 + (s[i] - '0'));
    p.exponent = neg ? -e : e;
  }
  return p;
}

// The significant digits (leading zeros dropped) and the power of ten they are scaled by.
struct Decimal {
  std::string digits;  // empty: the number is zero
  int64_t exponent = 0;
};

Decimal ToDecimal(const Parts& p) {
  Decimal d;
  d.digits.reserve(p.whole.size() + p.fraction.size());
  for (char c : p.whole) {
    if (!d.digits.empty() || c != '0') d.digits += c;
  }
  for (char c : p.fraction) {
    if (!d.digits.empty() || c != '0') d.digits += c;
  }
  d.exponent = p.exponent - static_cast<int64_t>(p.fraction.size());
  return d;
}

// The digits of an integer the decimal is exactly equal to; false when it has a fraction.
// Stops early (returning more than 20 digits) when it is too long for any 64-bit integer.
bool WholeDigits(Decimal d, std::string* out) {
  if (d.exponent < 0) {
    const auto drop = static_cast<size_t>(-d.exponent);
    if (drop > d.digits.size()) return false;
    for (size_t i = d.digits.size() - drop; i < d.digits.size(); ++i) {
      if (d.digits[i] != '0') return false;
    }
    d.digits.resize(d.digits.size() - drop);
  } else if (d.exponent > 0) {
    if (d.digits.size() + static_cast<size_t>(d.exponent) > 21) {
      *out = std::string(21, '9');  // more digits than any 64-bit integer: out of range
      return true;
    }
    d.digits.append(static_cast<size_t>(d.exponent), '0');
  }
  *out = std::move(d.digits);
  return true;
}

template <typename T>
IntFit Parse(const std::string& text, T* out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  if (ec == std::errc::result_out_of_range) return IntFit::kOutOfRange;
  if (ec != std::errc() || end != text.data() + text.size()) return IntFit::kNotWhole;
  return IntFit::kOk;
}

}  // namespace

bool IsNumber(std::string_view s) {
  size_t i = 0;
  if (i < s.size() && s[i] == '-') ++i;
  if (i >= s.size() || !Digit(s[i])) return false;
  if (s[i] == '0') {
    ++i;
  } else {
    while (i < s.size() && Digit(s[i])) ++i;
  }
  if (i < s.size() && s[i] == '.') {
    ++i;
    if (i >= s.size() || !Digit(s[i])) return false;
    while (i < s.size() && Digit(s[i])) ++i;
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (i >= s.size() || !Digit(s[i])) return false;
    while (i < s.size() && Digit(s[i])) ++i;
  }
  return i == s.size();
}

double ToDouble(std::string_view s) {
  double d = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), d);
  if (ec == std::errc()) return d;
  // Out of range: a magnitude of at least 1 overflowed, a smaller one underflowed.
  const Parts p = Split(s);
  const Decimal dec = ToDecimal(p);
  const double sign = p.negative ? -1.0 : 1.0;
  if (dec.digits.empty()) return sign * 0.0;
  const int64_t magnitude = static_cast<int64_t>(dec.digits.size()) - 1 + dec.exponent;
  return magnitude >= 0 ? sign * std::numeric_limits<double>::infinity() : sign * 0.0;
}

namespace {

// The digits of a whole number written with a fraction or an exponent ("1.5e3": "1500"), sign
// apart; kOk with empty digits for any zero.
IntFit WholeOf(std::string_view s, std::string* digits, bool* negative) {
  const Parts p = Split(s);
  *negative = p.negative;
  Decimal dec = ToDecimal(p);
  if (dec.digits.empty()) return IntFit::kOk;  // zero, however it is written ("-0", "0.0e999")
  if (!WholeDigits(std::move(dec), digits)) return IntFit::kNotWhole;
  return IntFit::kOk;
}

}  // namespace

IntFit ToInt64(std::string_view s, int64_t* out) {
  uint64_t plain = 0;
  if (PlainUint64(s, &plain) && plain <= static_cast<uint64_t>(INT64_MAX)) {
    *out = static_cast<int64_t>(plain);
    return IntFit::kOk;
  }
  std::string digits;
  bool negative = false;
  if (IntFit fit = WholeOf(s, &digits, &negative); fit != IntFit::kOk) return fit;
  if (digits.empty()) {
    *out = 0;
    return IntFit::kOk;
  }
  if (negative) digits.insert(digits.begin(), '-');
  return Parse(digits, out);
}

IntFit ToUint64(std::string_view s, uint64_t* out) {
  if (PlainUint64(s, out)) return IntFit::kOk;
  std::string digits;
  bool negative = false;
  if (IntFit fit = WholeOf(s, &digits, &negative); fit != IntFit::kOk) return fit;
  if (digits.empty()) {
    *out = 0;
    return IntFit::kOk;
  }
  if (negative) return IntFit::kNegative;
  return Parse(digits, out);
}

std::string Excerpt(std::string_view s) {
  constexpr size_t kMax = 40;
  std::string out;
  for (size_t i = 0; i < s.size() && i < kMax; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    out += (c > 0x20 && c < 0x7f && c != '"' && c != '\\') ? static_cast<char>(c) : '?';
  }
  if (s.size() > kMax) out += "...";
  return out;
}

}  // namespace mw::json
