// Base64 (RFC 4648): the OTLP JSON encoding of bytes values (the metricswriter) and the payloads
// and header blocks of JetStream's message-get answers (platformctl's DLQ walk).
// Pure: safe from any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace common {

// Appends `bytes` in the standard alphabet ('+', '/'), padded with '='.
void AppendBase64(std::string& out, std::string_view bytes);
// The bytes `in` encodes, in the standard or the URL-safe alphabet ('-', '_'), padding
// optional; false (or nullopt) for any other character or a length no encoding has. `*out`
// is replaced.
bool DecodeBase64(std::string_view in, std::string* out);
std::optional<std::string> DecodeBase64(std::string_view in);

}  // namespace common
