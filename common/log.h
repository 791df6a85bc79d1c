// Logging set-up: spdlog to stderr, as text or one JSON object per line.
//
// SetUpLogging() is called once by main() before any thread starts; afterwards spdlog's default
// logger is thread-safe and every file logs through spdlog::info() and friends.
#pragma once

#include <string>

namespace core {

// level: trace|debug|info|warn|error|critical|off; format: text|json. Both already validated.
void SetUpLogging(const std::string& service, const std::string& level, const std::string& format);

// Escapes a string for a JSON string literal (no surrounding quotes).
std::string JsonEscape(const std::string& s);

}  // namespace core
