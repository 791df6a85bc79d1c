// The value layer of the OTLP/JSON decoder (otlp_json.h): scalars in every spelling real
// exporters use, attributes (KeyValue lists, AnyValue) to canonical JSON text, and error messages
// that name the place in the document. Internal to the metricswriter; one reader per thread.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mw::json {

using simdjson::dom::element;
using simdjson::dom::element_type;
using simdjson::dom::object;

// Where in the document we are: lives on the stack, rendered only for an error message.
struct Path {
  const Path* parent = nullptr;
  std::string_view name;
  int64_t index = -1;
};
std::string Render(const Path* p);

// OTLP/JSON uses lowerCamelCase; protojson parsers also accept the proto field names.
inline bool Is(std::string_view key, std::string_view camel, std::string_view snake = {}) {
  return key == camel || (!snake.empty() && key == snake);
}

class Reader {
 public:
  // nuls: where NUL replacements are counted (the batch's counter).
  void Reset(uint64_t* nuls) {
    nuls_ = nuls;
    error_.clear();
  }
  const std::string& error() const { return error_; }

  // Each returns false after recording the first error (with its path).
  bool Fail(const Path& p, const std::string& what);
  bool U64(element e, const Path& p, uint64_t* out);
  bool NonNeg(element e, const Path& p, int64_t* out);  // a fixed64 that must fit bigint
  bool I64(element e, const Path& p, int64_t* out);
  bool I32(element e, const Path& p, int32_t* out);
  bool Dbl(element e, const Path& p, double* out);  // null = NaN (JSON.stringify's NaN, ±Inf)
  bool Str(element e, const Path& p, std::string_view* out);  // null = ""
  bool Bool(element e, const Path& p, bool* out);
  bool Obj(element e, const Path& p, object* out);
  bool AnyValue(element e, const Path& p, std::string& out);   // appends canonical JSON
  bool KeyValues(element e, const Path& p, std::string* out);  // a canonical JSON object

  // Visits the items of an array (null = empty) with their paths.
  template <typename F>
  bool Each(element e, const Path& p, F&& f) {
    if (e.is_null()) return true;
    if (e.type() != element_type::ARRAY) return Fail(p, "expected an array");
    int64_t i = 0;
    simdjson::dom::array items = e.get_array().value_unsafe();  // a copy: the result is a temporary
    for (element item : items) {
      Path ip{&p, {}, i++};
      if (!f(item, ip)) return false;
    }
    return true;
  }

 private:
  uint64_t* nuls_ = nullptr;
  std::string error_;
  std::string scratch_;
};

}  // namespace mw::json
