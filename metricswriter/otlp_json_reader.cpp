#include "metricswriter/otlp_json_reader.h"

#include <charconv>
#include <cmath>
#include <limits>

#include "metricswriter/otlp_text.h"

namespace mw::json {
namespace {

constexpr uint64_t kInt64Max = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());

template <typename T>
bool ParseWhole(std::string_view s, T* out) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return !s.empty() && ec == std::errc() && end == s.data() + s.size();
}

}  // namespace

std::string Render(const Path* p) {
  std::vector<const Path*> chain;
  for (; p != nullptr; p = p->parent) chain.push_back(p);
  std::string out;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    if (!(*it)->name.empty()) {
      if (!out.empty()) out += '.';
      out += (*it)->name;
    }
    if ((*it)->index >= 0) out += "[" + std::to_string((*it)->index) + "]";
  }
  return out.empty() ? "document" : out;
}

bool Reader::Fail(const Path& p, const std::string& what) {
  if (error_.empty()) error_ = "JSON: " + Render(&p) + ": " + what;
  return false;
}

bool Reader::U64(element e, const Path& p, uint64_t* out) {
  switch (e.type()) {
    case element_type::UINT64:
      *out = e.get_uint64().value_unsafe();
      return true;
    case element_type::INT64: {
      int64_t v = e.get_int64().value_unsafe();
      if (v < 0) return Fail(p, "negative value for an unsigned field");
      *out = static_cast<uint64_t>(v);
      return true;
    }
    case element_type::DOUBLE: {  // e.g. 1e3 from a hand-written or re-encoded document
      double d = e.get_double().value_unsafe();
      if (!(d >= 0) || d != std::floor(d) || d >= 18446744073709551616.0) {
        return Fail(p, "expected an unsigned integer");
      }
      *out = static_cast<uint64_t>(d);
      return true;
    }
    case element_type::STRING:
      if (!ParseWhole(e.get_string().value_unsafe(), out)) {
        return Fail(p, "expected an unsigned integer string");
      }
      return true;
    case element_type::NULL_VALUE:
      *out = 0;
      return true;
    default:
      return Fail(p, "expected an unsigned integer");
  }
}

bool Reader::NonNeg(element e, const Path& p, int64_t* out) {
  uint64_t v = 0;
  if (!U64(e, p, &v)) return false;
  if (v > kInt64Max) return Fail(p, "value above 2^63-1 cannot be stored");
  *out = static_cast<int64_t>(v);
  return true;
}

bool Reader::I64(element e, const Path& p, int64_t* out) {
  switch (e.type()) {
    case element_type::INT64:
      *out = e.get_int64().value_unsafe();
      return true;
    case element_type::UINT64:
      return Fail(p, "integer out of int64 range");
    case element_type::DOUBLE: {
      double d = e.get_double().value_unsafe();
      if (d != std::floor(d) || !(d >= -9223372036854775808.0) || d >= 9223372036854775808.0) {
        return Fail(p, "expected an integer");
      }
      *out = static_cast<int64_t>(d);
      return true;
    }
    case element_type::STRING:
      if (!ParseWhole(e.get_string().value_unsafe(), out)) {
        return Fail(p, "expected an integer string");
      }
      return true;
    case element_type::NULL_VALUE:
      *out = 0;
      return true;
    default:
      return Fail(p, "expected an integer");
  }
}

bool Reader::I32(element e, const Path& p, int32_t* out) {
  int64_t v = 0;
  if (!I64(e, p, &v)) return false;
  if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max()) {
    return Fail(p, "integer out of int32 range");
  }
  *out = static_cast<int32_t>(v);
  return true;
}

bool Reader::Dbl(element e, const Path& p, double* out) {
  switch (e.type()) {
    case element_type::INT64:
    case element_type::UINT64:
    case element_type::DOUBLE:
      *out = e.get_double().value_unsafe();
      return true;
    case element_type::NULL_VALUE:
      *out = std::numeric_limits<double>::quiet_NaN();
      return true;
    case element_type::STRING: {
      std::string_view s = e.get_string().value_unsafe();
      if (s == "NaN") {
        *out = std::numeric_limits<double>::quiet_NaN();
      } else if (s == "Infinity") {
        *out = std::numeric_limits<double>::infinity();
      } else if (s == "-Infinity") {
        *out = -std::numeric_limits<double>::infinity();
      } else if (!ParseWhole(s, out)) {
        return Fail(p, "expected a number");
      }
      return true;
    }
    default:
      return Fail(p, "expected a number");
  }
}

bool Reader::Str(element e, const Path& p, std::string_view* out) {
  if (e.is_null()) {
    *out = {};
    return true;
  }
  if (e.type() != element_type::STRING) return Fail(p, "expected a string");
  *out = e.get_string().value_unsafe();
  return true;
}

bool Reader::Bool(element e, const Path& p, bool* out) {
  if (e.is_null()) {
    *out = false;
    return true;
  }
  if (e.type() != element_type::BOOL) return Fail(p, "expected true or false");
  *out = e.get_bool().value_unsafe();
  return true;
}

bool Reader::Obj(element e, const Path& p, object* out) {
  if (e.type() != element_type::OBJECT) return Fail(p, "expected an object");
  *out = e.get_object().value_unsafe();
  return true;
}

bool Reader::KeyValues(element e, const Path& p, std::string* out) {
  std::vector<text::Member> members;
  if (simdjson::dom::array arr; e.get(arr) == simdjson::SUCCESS) members.reserve(arr.size());
  bool ok = Each(e, p, [&](element kv, const Path& kp) {
    object o;
    if (!Obj(kv, kp, &o)) return false;
    text::Member m;
    m.value = "null";
    for (auto [key, v] : o) {
      Path fp{&kp, key};
      if (Is(key, "key")) {
        std::string_view s;
        if (!Str(v, fp, &s)) return false;
        m.key = std::string(s);
      } else if (Is(key, "value")) {
        m.value.clear();
        if (!AnyValue(v, fp, m.value)) return false;
      }
    }
    members.push_back(std::move(m));
    return true;
  });
  if (!ok) return false;
  *out = text::Object(members, nuls_);
  return true;
}

bool Reader::AnyValue(element e, const Path& p, std::string& out) {
  std::string value = "null";  // an empty AnyValue, or one with only unknown members
  if (!e.is_null()) {
    object o;
    if (!Obj(e, p, &o)) return false;
    for (auto [key, v] : o) {
      Path fp{&p, key};
      std::string cur;
      if (Is(key, "stringValue", "string_value")) {
        std::string_view s;
        if (!Str(v, fp, &s)) return false;
        text::AppendString(cur, s, nuls_);
      } else if (Is(key, "boolValue", "bool_value")) {
        bool b = false;
        if (!Bool(v, fp, &b)) return false;
        cur = b ? "true" : "false";
      } else if (Is(key, "intValue", "int_value")) {
        int64_t i = 0;
        if (!I64(v, fp, &i)) return false;
        text::AppendInt(cur, i);
      } else if (Is(key, "doubleValue", "double_value")) {
        double d = 0;
        if (!Dbl(v, fp, &d)) return false;
        text::AppendDouble(cur, d);
      } else if (Is(key, "bytesValue", "bytes_value")) {
        std::string_view s;
        if (!Str(v, fp, &s)) return false;
        if (!text::DecodeBase64(s, &scratch_)) return Fail(fp, "invalid base64");
        cur = "\"";
        text::AppendBase64(cur, scratch_);
        cur += '"';
      } else if (Is(key, "arrayValue", "array_value") || Is(key, "kvlistValue", "kvlist_value")) {
        bool is_array = key[0] == 'a';
        element values;
        bool have = false;
        if (!v.is_null()) {
          object inner;
          if (!Obj(v, fp, &inner)) return false;
          have = inner["values"].get(values) == simdjson::SUCCESS;
        }
        Path vp{&fp, "values"};
        if (is_array) {
          cur = "[";
          if (have && !Each(values, vp, [&](element item, const Path& ip) {
                if (cur.size() > 1) cur += ',';
                return AnyValue(item, ip, cur);
              })) {
            return false;
          }
          cur += ']';
        } else {
          cur = "{}";
          if (have && !KeyValues(values, vp, &cur)) return false;
        }
      } else {
        continue;  // unknown member: ignored
      }
      value = std::move(cur);  // a second oneof member replaces the first, as protojson's last
    }
  }
  out += value;
  return true;
}

}  // namespace mw::json
