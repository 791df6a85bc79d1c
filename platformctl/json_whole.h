// Whole numbers read from JSON we do not control (JetStream's answers, KV records anyone with
// access may write): only an integer that the target type holds is read.
//
// nlohmann's get<int>() of a float converts it with a plain cast: 1.44e127 into an int is
// undefined behaviour (tests/fuzz/fuzz_dlq found it in a redrive task record), and 2.5 reads as
// 2. A negative integer read as unsigned, or one past the type's range, wraps to another number.
// Pure, header-only; any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

namespace platformctl::json_whole {

// The value when it is a JSON integer within T's range; nullopt for a float (1.0 included), a
// string, null, or an integer T cannot hold.
template <typename T>
std::optional<T> Whole(const nlohmann::json& v) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (!std::in_range<T>(u)) return std::nullopt;
    return static_cast<T>(u);
  }
  if (v.is_number_integer()) {
    const int64_t i = v.get<int64_t>();
    if (!std::in_range<T>(i)) return std::nullopt;
    return static_cast<T>(i);
  }
  return std::nullopt;
}

// Member `key` of object `j` as Whole reads it; nullopt when absent as well.
template <typename T>
std::optional<T> WholeAt(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return std::nullopt;
  auto it = j.find(key);
  if (it == j.end()) return std::nullopt;
  return Whole<T>(*it);
}

// Member `key` as a count: a whole number 0 or more, else 0 (absent, negative, float, text).
inline uint64_t CountAt(const nlohmann::json& j, const char* key) {
  return WholeAt<uint64_t>(j, key).value_or(0);
}

// Member `key` when it is a string, else "".
inline std::string StringAt(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return "";
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

}  // namespace platformctl::json_whole
