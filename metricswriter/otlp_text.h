// Canonical text pieces shared by the JSON and protobuf decoders (see otlp_model.h): JSON string
// and number literals, NUL replacement, sorted JSON objects (base64: common/base64.h). Pure; safe
// from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mw::text {

// s with every NUL replaced by U+FFFD; *nuls counts the replacements.
std::string Clean(std::string_view s, uint64_t* nuls);

// Appends s as a JSON string literal (quotes included), NUL replaced and counted.
void AppendString(std::string& out, std::string_view s, uint64_t* nuls);
// Shortest round-trip form, always with '.' or an exponent; NaN/±Inf as JSON strings.
void AppendDouble(std::string& out, double d);
void AppendInt(std::string& out, int64_t v);

// One member of a JSON object being built: the raw key and its value's JSON text.
struct Member {
  std::string key;
  std::string value;
};

// {"k":v,...} with members sorted by key (stable, so repeated keys keep their order).
std::string Object(std::vector<Member>& members, uint64_t* nuls);
// The same, appended to out (whose buffer a caller can reuse).
void AppendObject(std::string& out, std::vector<Member>& members, uint64_t* nuls);

}  // namespace mw::text
