// The value layer of the OTLP/JSON decoder (otlp_json.h), over simdjson's On-Demand API:
// scalars in every spelling real exporters use, attributes (KeyValue lists, AnyValue) to
// canonical JSON text, and error messages that name the place in the document.
//
// On-Demand reads each value once, in document order, and checks only what is read, so every
// value is read: the fields the decoder does not use are walked by Skip(), which checks them as
// strictly as the rest (a document is accepted only if it is JSON throughout).
// Internal to the metricswriter; one reader per thread, used during one document's iteration.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "metricswriter/otlp_text.h"

namespace mw::json {

namespace od = simdjson::ondemand;
using Value = od::value;

// Where in the document we are: lives on the stack, rendered only for an error message.
struct Path {
  const Path* parent = nullptr;
  std::string_view name;
  int64_t index = -1;
  int depth = 0;  // members and items above this one: Fields() and Each() refuse past kMaxDepth
};
// Names from the document are cut and made safe; a long chain keeps its first and last levels.
std::string Render(const Path* p);

// How deep a document may nest (object members and array items counted, so an OTLP point's
// attribute is about 10 levels down and each kvlistValue nesting adds 4). Every nesting of the
// reader recurses through Fields() or Each(): without this bound a document of 100 KB nested
// 50,000 levels deep overflowed the intake thread's stack (issue 35), and the batch came back to
// every leader in turn. protobuf's bound (otlp_wire.cpp) is 100 messages.
inline constexpr int kMaxDepth = 256;

// OTLP/JSON uses lowerCamelCase; protojson parsers also accept the proto field names.
inline bool Is(std::string_view key, std::string_view camel, std::string_view snake = {}) {
  return key == camel || (!snake.empty() && key == snake);
}

// What a field handler did with the value it was given.
enum class Field {
  kRead,     // read it
  kFailed,   // recorded an error
  kIgnored,  // not one of ours: the reader walks (and checks) it
};

class Reader {
 public:
  // nuls: where NUL replacements are counted (the batch's counter).
  void Reset(uint64_t* nuls) {
    nuls_ = nuls;
    error_.clear();
  }
  const std::string& error() const { return error_; }

  // Each returns false after recording the first error (with its path); each reads the value.
  bool Fail(const Path& p, const std::string& what);
  bool Fail(const Path& p, simdjson::error_code e);
  bool U64(Value v, const Path& p, uint64_t* out);    // uint64 / fixed64
  bool NonNeg(Value v, const Path& p, int64_t* out);  // a fixed64 that must fit bigint
  bool I64(Value v, const Path& p, int64_t* out);     // int64 / sfixed64
  bool I32(Value v, const Path& p, int32_t* out);     // int32 / sint32
  bool Dbl(Value v, const Path& p, double* out);      // null = NaN (JSON.stringify's NaN, ±Inf)
  bool Str(Value v, const Path& p, std::string_view* out);   // null = ""
  bool Bool(Value v, const Path& p, bool* out);              // null = false
  bool AnyValue(Value v, const Path& p, std::string& out);   // appends canonical JSON
  bool KeyValues(Value v, const Path& p, std::string* out);  // a canonical JSON object
  bool Skip(Value v, const Path& p);                         // any JSON value, checked

  // Whether v is null (then it is read); false on an error too (recorded).
  bool Null(Value& v, const Path& p, bool* is_null);

  // Calls f(key, value, path) for each member of an object; returns false on the first error
  // (the object's or f's). A member f ignores is walked by Skip.
  template <typename F>
  bool Fields(Value v, const Path& p, F&& f) {
    if (p.depth >= kMaxDepth) return TooDeep(p);
    od::object o;
    if (!Object(v, p, &o)) return false;
    for (auto member : o) {
      if (auto e = member.error()) return Fail(p, e);
      std::string_view key;
      if (auto e = member.unescaped_key().get(key)) return Fail(p, e);
      Path fp{&p, key, -1, p.depth + 1};
      Value fv;
      if (auto e = member.value().get(fv)) return Fail(fp, e);
      switch (f(key, fv, fp)) {
        case Field::kRead:
          break;
        case Field::kFailed:
          return false;
        case Field::kIgnored:
          if (!Skip(fv, fp)) return false;
          break;
      }
    }
    return true;
  }

  // Calls f(item, path) for the items of an array (null = empty). With `count`, *count gets
  // the number of items first (one more pass over the array's structure, to reserve room).
  template <typename F>
  bool Each(Value v, const Path& p, F&& f, size_t* count = nullptr) {
    if (p.depth >= kMaxDepth) return TooDeep(p);
    bool is_null = false;
    if (!Null(v, p, &is_null)) return false;
    if (is_null) {
      if (count != nullptr) *count = 0;
      return true;
    }
    od::array items;
    if (!Array(v, p, &items)) return false;
    if (count != nullptr) {
      if (auto e = items.count_elements().get(*count)) return Fail(p, e);
    }
    int64_t i = 0;
    for (auto item : items) {
      Path ip{&p, {}, i++, p.depth + 1};
      Value iv;
      if (auto e = item.get(iv)) return Fail(ip, e);
      if (!f(iv, ip)) return false;
    }
    return true;
  }

 private:
  bool TooDeep(const Path& p);
  bool Object(Value& v, const Path& p, od::object* out);
  bool Array(Value& v, const Path& p, od::array* out);
  // The text of a number token (trailing white space removed), or of a string's content.
  bool NumberToken(Value& v, const Path& p, std::string_view* out);

  uint64_t* nuls_ = nullptr;
  std::string error_;
  std::string scratch_;
  // Member lists of KeyValues, one per nesting level (kvlistValue nests), kept between calls
  // so a point's attribute list reuses the vector of the one before (its strings are new).
  std::deque<std::vector<text::Member>> members_;  // a deque: a deeper level never moves these
  size_t depth_ = 0;
};

}  // namespace mw::json
