#include "replayer/event_rules.h"

#include "common/log.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <optional>

namespace replayer::rules {
namespace {

std::string Quoted(std::string_view key) { return "'" + Excerpt(key) + "'"; }

std::string FormatNumber(double v) {
  char buf[64];
  auto [p, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, p) : "?";
}

bool HasNul(std::string_view s) { return s.find('\0') != std::string_view::npos; }

// A number of a JSON value, whatever its spelling; nullopt for a non-number.
std::optional<double> AsNumber(simdjson::dom::element v) {
  switch (v.type()) {
    case simdjson::dom::element_type::INT64:
      return static_cast<double>(int64_t(v));
    case simdjson::dom::element_type::UINT64:
      return static_cast<double>(uint64_t(v));
    case simdjson::dom::element_type::DOUBLE:
      return double(v);
    default:
      return std::nullopt;
  }
}

std::string CheckLeaf(const std::string& key, simdjson::dom::element v) {
  if (HasNul(key)) {
    return "the event's data key " + Quoted(key) +
           " holds a NUL character, which PostgreSQL cannot store";
  }
  if (CountChars(key) > kMaxDataChars) {
    return "the event's data key " + Quoted(key) + " is longer than 500 characters (Umami's " +
           "data_key column)";
  }
  if (auto n = AsNumber(v)) {
    if (!(std::fabs(*n) < kMaxDataNumber)) {
      return "the event's data field " + Quoted(key) + " holds " + FormatNumber(*n) +
             ", beyond what Umami's numeric(19,4) column stores (less than 10^15)";
    }
    return "";
  }
  if (v.is_string()) {
    std::string_view s = v.get_string().value_unsafe();
    if (HasNul(s)) {
      return "the event's data field " + Quoted(key) +
             " holds a NUL character, which PostgreSQL cannot store";
    }
    if (CountChars(s) > kMaxDataChars) {
      return "the event's data field " + Quoted(key) +
             " is a text longer than 500 characters (Umami's string_value column)";
    }
    if (BadDateLike(s)) {
      return "the event's data field " + Quoted(key) + " looks like a date to Umami but is none (" +
             Excerpt(s, 32) + ")";
    }
    return "";
  }
  if (v.is_array()) {
    // Umami stores an array as its JSON text; the minified text is as long as JSON.stringify's
    // but for number spellings.
    if (CountChars(simdjson::minify(v)) > kMaxDataChars) {
      return "the event's data field " + Quoted(key) +
             " is an array whose JSON text is longer than 500 characters (Umami's string_value "
             "column)";
    }
  }
  return "";  // booleans and null are stored as short texts
}

std::string Walk(simdjson::dom::object obj, const std::string& parent) {
  for (auto member : obj) {
    std::string key =
        parent.empty() ? std::string(member.key) : parent + "." + std::string(member.key);
    simdjson::dom::object inner;
    std::string why;
    if (member.value.get_object().get(inner) == simdjson::SUCCESS) {
      why = Walk(inner, key);  // Umami flattens nested objects to dotted keys
    } else {
      why = CheckLeaf(key, member.value);
    }
    if (!why.empty()) return why;
  }
  return "";
}

// JavaScript truthiness, for the values Umami's revenue test looks at.
bool Truthy(simdjson::dom::element v) {
  switch (v.type()) {
    case simdjson::dom::element_type::NULL_VALUE:
      return false;
    case simdjson::dom::element_type::BOOL:
      return bool(v);
    case simdjson::dom::element_type::STRING:
      return !v.get_string().value_unsafe().empty();
    default:
      if (auto n = AsNumber(v)) return *n != 0;
      return true;  // objects and arrays
  }
}

// `revenue > 0` in JavaScript for a number, a numeric text or a boolean.
std::optional<double> RevenueAmount(simdjson::dom::element v) {
  if (auto n = AsNumber(v)) return *n;
  if (v.is_bool()) return bool(v) ? 1.0 : 0.0;
  if (v.is_string()) {
    std::string_view s = v.get_string().value_unsafe();
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    double d = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), d);
    if (ec == std::errc() && p == s.data() + s.size()) return d;
  }
  return std::nullopt;
}

// Umami 3.x stores data.revenue with data.currency in a table of its own, after the event row.
std::string CheckRevenue(simdjson::dom::object data) {
  simdjson::dom::element revenue, currency;
  if (data["revenue"].get(revenue) != simdjson::SUCCESS) return "";
  if (data["currency"].get(currency) != simdjson::SUCCESS || !Truthy(currency)) return "";
  auto amount = RevenueAmount(revenue);
  if (!amount || !(*amount > 0)) return "";
  std::string_view cur;
  if (currency.get_string().get(cur) != simdjson::SUCCESS || HasNul(cur) ||
      CountChars(cur) > kMaxCurrencyChars) {
    return "the event's data.currency is not a text of at most 10 characters, which Umami "
           "needs to store its revenue";
  }
  if (revenue.is_bool()) return "the event's data.revenue is true, which is no amount";
  if (!(*amount < kMaxDataNumber)) {
    return "the event's data.revenue is beyond what Umami's numeric(19,4) column stores";
  }
  return "";
}

bool Digits(std::string_view s, size_t at, size_t n, int* out) {
  int v = 0;
  for (size_t i = at; i < at + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  *out = v;
  return true;
}

}  // namespace

std::string CheckData(simdjson::dom::object data) {
  std::string why = Walk(data, "");
  if (!why.empty()) return why;
  return CheckRevenue(data);
}

std::string CheckHeaderValue(std::string_view field, std::string_view value, size_t max_bytes) {
  if (value.size() > max_bytes) {
    return "the event's " + std::string(field) + " is longer than " + std::to_string(max_bytes) +
           " bytes, more than a request header may carry";
  }
  for (size_t i = 0; i < value.size(); ++i) {
    auto c = static_cast<unsigned char>(value[i]);
    if ((c < 0x20 && c != '\t') || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "0x%02x", c);
      return "the event's " + std::string(field) + " holds a control character (" + buf +
             " at byte " + std::to_string(i) + "), which cannot go into a request header";
    }
  }
  return "";
}

bool StrictIpv4(std::string_view ip) {
  int parts = 0;
  size_t i = 0;
  while (parts < 4) {
    size_t start = i;
    int v = 0;
    while (i < ip.size() && ip[i] >= '0' && ip[i] <= '9' && i - start < 3) {
      v = v * 10 + (ip[i] - '0');
      ++i;
    }
    size_t len = i - start;
    if (len == 0 || v > 255 || (len > 1 && ip[start] == '0')) return false;
    ++parts;
    if (parts < 4) {
      if (i >= ip.size() || ip[i] != '.') return false;
      ++i;
    }
  }
  return i == ip.size();
}

std::string_view CutChars(std::string_view s, size_t max_chars) {
  size_t chars = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) continue;  // continuation byte
    if (chars == max_chars) return s.substr(0, i);
    ++chars;
  }
  return s;
}

size_t CountChars(std::string_view s) {
  size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

bool BadDateLike(std::string_view s) {
  // Umami's DATETIME_REGEX: YYYY-MM-DDTHH:MM:SS, optionally .mmm, then optionally Z or +HH:MM.
  if (s.size() != 19 && s.size() != 23 && s.size() != 24 && s.size() != 29) return false;
  int y, mo, d, h, mi, se, ms = 0, oh = 0, om = 0;
  if (!Digits(s, 0, 4, &y) || s[4] != '-' || !Digits(s, 5, 2, &mo) || s[7] != '-' ||
      !Digits(s, 8, 2, &d) || s[10] != 'T' || !Digits(s, 11, 2, &h) || s[13] != ':' ||
      !Digits(s, 14, 2, &mi) || s[16] != ':' || !Digits(s, 17, 2, &se)) {
    return false;
  }
  if (s.size() > 19) {
    if (s[19] != '.' || !Digits(s, 20, 3, &ms)) return false;
    if (s.size() == 24 && s[23] != 'Z') return false;
    if (s.size() == 29 &&
        (s[23] != '+' || !Digits(s, 24, 2, &oh) || s[26] != ':' || !Digits(s, 27, 2, &om))) {
      return false;
    }
  }
  // It matches: now what V8's Date accepts (any day up to 31, 24:00:00.000, offsets below 24h).
  bool valid = mo >= 1 && mo <= 12 && d >= 1 && d <= 31 && mi <= 59 && se <= 59 && oh <= 23 &&
               om <= 59 && (h <= 23 || (h == 24 && mi == 0 && se == 0 && ms == 0));
  if (!valid) return true;
  // PostgreSQL has no year 0: the local year 0, or year 1 moved into year 0 by the offset.
  if (y == 0) return true;
  if (y == 1 && mo == 1 && d == 1 && h * 60 + mi < oh * 60 + om) return true;
  return false;
}

std::string Excerpt(std::string_view s, size_t max) { return common::log::Escaped(s, max); }

}  // namespace replayer::rules
