#include "metricswriter/otlp_json_reader.h"

#include <limits>

#include "common/base64.h"
#include "metricswriter/json_number.h"
#include "metricswriter/otlp_text.h"

namespace mw::json {
namespace {

constexpr uint64_t kInt64Max = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());

std::string_view TrimRight(std::string_view s) {
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

std::string ValueText(std::string_view text) { return "value " + Excerpt(text); }

Field Read(bool ok) { return ok ? Field::kRead : Field::kFailed; }

}  // namespace

std::string Render(const Path* p) {
  std::vector<const Path*> chain;
  for (; p != nullptr; p = p->parent) chain.push_back(p);
  // A reason is read by a person and travels in a header: a path deeper than this shows its
  // first and last levels and how many are left out.
  constexpr size_t kEnds = 8;
  std::string out;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    const size_t level = static_cast<size_t>(it - chain.rbegin());
    if (chain.size() > 2 * kEnds && level >= kEnds && level < chain.size() - kEnds) {
      if (level == kEnds) out += "…(" + std::to_string(chain.size() - 2 * kEnds) + " levels)…";
      continue;
    }
    if (!(*it)->name.empty()) {
      if (!out.empty()) out += '.';
      out += Excerpt((*it)->name);  // an unknown member's name comes from the document
    }
    if ((*it)->index >= 0) out += "[" + std::to_string((*it)->index) + "]";
  }
  return out.empty() ? "document" : out;
}

bool Reader::Fail(const Path& p, const std::string& what) {
  if (error_.empty()) error_ = "JSON: " + Render(&p) + ": " + what;
  return false;
}

bool Reader::TooDeep(const Path& p) {
  return Fail(p, "nested deeper than " + std::to_string(kMaxDepth) + " levels");
}

bool Reader::Fail(const Path& p, simdjson::error_code e) {
  return Fail(p, simdjson::error_message(e));
}

bool Reader::Null(Value& v, const Path& p, bool* is_null) {
  od::json_type t;
  if (auto e = v.type().get(t)) return Fail(p, e);
  *is_null = false;
  if (t != od::json_type::null) return true;
  bool n = false;
  if (auto e = v.is_null().get(n)) return Fail(p, e);
  if (!n) return Fail(p, "invalid literal (expected null)");
  *is_null = true;
  return true;
}

bool Reader::Object(Value& v, const Path& p, od::object* out) {
  od::json_type t;
  if (auto e = v.type().get(t)) return Fail(p, e);
  if (t != od::json_type::object) return Fail(p, "expected an object");
  if (auto e = v.get_object().get(*out)) return Fail(p, e);
  return true;
}

bool Reader::Array(Value& v, const Path& p, od::array* out) {
  od::json_type t;
  if (auto e = v.type().get(t)) return Fail(p, e);
  if (t != od::json_type::array) return Fail(p, "expected an array");
  if (auto e = v.get_array().get(*out)) return Fail(p, e);
  return true;
}

bool Reader::NumberToken(Value& v, const Path& p, std::string_view* out) {
  *out = TrimRight(v.raw_json_token());
  if (!IsNumber(*out)) return Fail(p, "invalid number " + Excerpt(*out));
  return true;
}

// Integers: simdjson reads those that fit its 64-bit types; anything else a JSON number can
// spell (2^64, 1e3, 5.0, -0, 1e400) is judged from its text, exactly.
bool Reader::U64(Value v, const Path& p, uint64_t* out) {
  od::json_type t;
  if (auto e = v.type().get(t)) return Fail(p, e);
  std::string_view text;
  switch (t) {
    case od::json_type::number:
      if (v.get_uint64().get(*out) == simdjson::SUCCESS) return true;
      if (!NumberToken(v, p, &text)) return false;
      break;
    case od::json_type::string:
      if (auto e = v.get_string().get(text)) return Fail(p, e);
      if (PlainUint64(text, out)) return true;  // how exporters write times
      if (!IsNumber(text)) {
        return Fail(p, "expected an unsigned integer string, got \"" + Excerpt(text) + "\"");
      }
      break;
    case od::json_type::null: {
      bool n = false;
      if (!Null(v, p, &n)) return false;
      *out = 0;
      return true;
    }
    default:
      return Fail(p, "expected an unsigned integer");
  }
  switch (ToUint64(text, out)) {
    case IntFit::kOk:
      return true;
    case IntFit::kNotWhole:
      return Fail(p, ValueText(text) + " is not a whole number");
    case IntFit::kNegative:
      return Fail(p, "negative " + ValueText(text) + " for an unsigned field");
    case IntFit::kOutOfRange:
      break;
  }
  return Fail(p, ValueText(text) + " is out of the unsigned 64-bit range");
}

bool Reader::NonNeg(Value v, const Path& p, int64_t* out) {
  uint64_t u = 0;
  if (!U64(v, p, &u)) return false;
  if (u > kInt64Max) {
    return Fail(p, ValueText(std::to_string(u)) + " is above 2^63-1 and cannot be stored");
  }
  *out = static_cast<int64_t>(u);
  return true;
}

bool Reader::I64(Value v, const Path& p, int64_t* out) {
  od::json_type t;
  if (auto e = v.type().get(t)) return Fail(p, e);
  std::string_view text;
  switch (t) {
    case od::json_type::number:
      if (v.get_int64().get(*out) == simdjson::SUCCESS) return true;
      if (!NumberToken(v, p, &text)) return false;
      break;
    case od::json_type::string:
      if (auto e = v.get_string().get(text)) return Fail(p, e);
      if (uint64_t u = 0; PlainUint64(text, &u) && u <= kInt64Max) {
        *out = static_cast<int64_t>(u);
        return true;
      }
      if (!IsNumber(text)) {
        return Fail(p, "expected an integer string, got \"" + Excerpt(text) + "\"");
      }
      break;
    case od::json_type::null: {
      bool n = false;
      if (!Null(v, p, &n)) return false;
      *out = 0;
      return true;
    }
    default:
      return Fail(p, "expected an integer");
  }
  switch (ToInt64(text, out)) {
    case IntFit::kOk:
      return true;
    case IntFit::kNotWhole:
      return Fail(p, ValueText(text) + " is not a whole number");
    case IntFit::kNegative:
    case IntFit::kOutOfRange:
      break;
  }
  return Fail(p, ValueText(text) + " is out of the 64-bit integer range");
}

bool Reader::I32(Value v, const Path& p, int32_t* out) {
  int64_t x = 0;
  if (!I64(v, p, &x)) return false;
  if (x < std::numeric_limits<int32_t>::min() || x > std::numeric_limits<int32_t>::max()) {
    return Fail(p, ValueText(std::to_string(x)) + " is out of the 32-bit integer range");
  }
  *out = static_cast<int32_t>(x);
  return true;
}

bool Reader::Dbl(Value v, const Path& p, double* out) {
  od::json_type t;
  if (auto e = v.type().get(t)) return Fail(p, e);
  switch (t) {
    case od::json_type::number: {
      if (v.get_double().get(*out) == simdjson::SUCCESS) return true;
      std::string_view text;
      if (!NumberToken(v, p, &text)) return false;
      *out = ToDouble(text);  // beyond double's range: ±infinity or ±0, as IEEE 754 rounds
      return true;
    }
    case od::json_type::null: {
      bool n = false;
      if (!Null(v, p, &n)) return false;
      *out = std::numeric_limits<double>::quiet_NaN();
      return true;
    }
    case od::json_type::string: {
      std::string_view s;
      if (auto e = v.get_string().get(s)) return Fail(p, e);
      if (s == "NaN") {
        *out = std::numeric_limits<double>::quiet_NaN();
      } else if (s == "Infinity") {
        *out = std::numeric_limits<double>::infinity();
      } else if (s == "-Infinity") {
        *out = -std::numeric_limits<double>::infinity();
      } else if (IsNumber(s)) {
        *out = ToDouble(s);
      } else {
        return Fail(p, "expected a number, got \"" + Excerpt(s) + "\"");
      }
      return true;
    }
    default:
      return Fail(p, "expected a number");
  }
}

bool Reader::Str(Value v, const Path& p, std::string_view* out) {
  od::json_type t;
  if (auto e = v.type().get(t)) return Fail(p, e);
  if (t == od::json_type::null) {
    bool n = false;
    *out = {};
    return Null(v, p, &n);
  }
  if (t != od::json_type::string) return Fail(p, "expected a string");
  if (auto e = v.get_string().get(*out)) return Fail(p, e);
  return true;
}

bool Reader::Bool(Value v, const Path& p, bool* out) {
  od::json_type t;
  if (auto e = v.type().get(t)) return Fail(p, e);
  if (t == od::json_type::null) {
    bool n = false;
    *out = false;
    return Null(v, p, &n);
  }
  if (t != od::json_type::boolean) return Fail(p, "expected true or false");
  if (auto e = v.get_bool().get(*out)) return Fail(p, e);
  return true;
}

bool Reader::Skip(Value v, const Path& p) {
  od::json_type t;
  if (auto e = v.type().get(t)) return Fail(p, e);
  switch (t) {
    case od::json_type::object:
      return Fields(v, p, [](std::string_view, Value&, const Path&) { return Field::kIgnored; });
    case od::json_type::array:
      return Each(v, p, [&](Value item, const Path& ip) { return Skip(item, ip); });
    case od::json_type::number: {
      double d = 0;
      return Dbl(v, p, &d);
    }
    case od::json_type::string: {
      std::string_view s;
      return Str(v, p, &s);
    }
    case od::json_type::boolean: {
      bool b = false;
      return Bool(v, p, &b);
    }
    case od::json_type::null: {
      bool n = false;
      return Null(v, p, &n);
    }
  }
  return Fail(p, "unexpected value");
}

bool Reader::KeyValues(Value v, const Path& p, std::string* out) {
  if (depth_ == members_.size()) members_.emplace_back();
  std::vector<text::Member>& members = members_[depth_++];
  members.clear();
  bool ok = Each(v, p, [&](Value kv, const Path& kp) {
    members.emplace_back();
    members.back().value = "null";
    return Fields(kv, kp, [&](std::string_view key, Value& fv, const Path& fp) {
      text::Member& m = members.back();  // emplace_back above: not moved meanwhile
      if (Is(key, "key")) {
        std::string_view s;
        if (!Str(fv, fp, &s)) return Field::kFailed;
        m.key.assign(s);
        return Field::kRead;
      }
      if (Is(key, "value")) {
        m.value.clear();
        return AnyValue(fv, fp, m.value) ? Field::kRead : Field::kFailed;
      }
      return Field::kIgnored;
    });
  });
  --depth_;
  if (!ok) return false;
  out->clear();
  text::AppendObject(*out, members, nuls_);
  return true;
}

bool Reader::AnyValue(Value v, const Path& p, std::string& out) {
  // Written straight into `out`; a second oneof member replaces the first (as protojson's last
  // wins), an empty AnyValue or one with only unknown members is null.
  const size_t start = out.size();
  out += "null";
  bool is_null = false;
  if (!Null(v, p, &is_null)) return false;
  if (is_null) return true;
  return Fields(v, p, [&](std::string_view key, Value& fv, const Path& fp) {
    if (Is(key, "stringValue", "string_value")) {
      std::string_view s;
      if (!Str(fv, fp, &s)) return Field::kFailed;
      out.resize(start);
      text::AppendString(out, s, nuls_);
    } else if (Is(key, "boolValue", "bool_value")) {
      bool b = false;
      if (!Bool(fv, fp, &b)) return Field::kFailed;
      out.resize(start);
      out += b ? "true" : "false";
    } else if (Is(key, "intValue", "int_value")) {
      int64_t i = 0;
      if (!I64(fv, fp, &i)) return Field::kFailed;
      out.resize(start);
      text::AppendInt(out, i);
    } else if (Is(key, "doubleValue", "double_value")) {
      double d = 0;
      if (!Dbl(fv, fp, &d)) return Field::kFailed;
      out.resize(start);
      text::AppendDouble(out, d);
    } else if (Is(key, "bytesValue", "bytes_value")) {
      std::string_view s;
      if (!Str(fv, fp, &s)) return Field::kFailed;
      if (!common::DecodeBase64(s, &scratch_)) {
        Fail(fp, "invalid base64");
        return Field::kFailed;
      }
      out.resize(start);
      out += '"';
      common::AppendBase64(out, scratch_);
      out += '"';
    } else if (Is(key, "arrayValue", "array_value") || Is(key, "kvlistValue", "kvlist_value")) {
      const bool is_array = key[0] == 'a';
      out.resize(start);
      out += is_array ? "[]" : "{}";
      bool inner_null = false;
      if (!Null(fv, fp, &inner_null)) return Field::kFailed;
      if (inner_null) return Field::kRead;
      return Read(Fields(fv, fp, [&](std::string_view ik, Value& iv, const Path& ip) {
        if (!Is(ik, "values")) return Field::kIgnored;
        out.resize(start);  // a repeated "values" replaces the earlier one
        if (!is_array) {
          std::string object;
          if (!KeyValues(iv, ip, &object)) return Field::kFailed;
          out += object;
          return Field::kRead;
        }
        out += '[';
        bool first = true;
        if (!Each(iv, ip, [&](Value item, const Path& itp) {
              if (!first) out += ',';
              first = false;
              return AnyValue(item, itp, out);
            })) {
          return Field::kFailed;
        }
        out += ']';
        return Field::kRead;
      }));
    } else {
      return Field::kIgnored;
    }
    return Field::kRead;
  });
}

}  // namespace mw::json
