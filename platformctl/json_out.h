// platformctl's JSON output (--json answers, reports). Stateless; any thread.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace platformctl {

// One line of JSON. Keys, reasons and subjects come from outside: a byte that is not UTF-8 is
// replaced (U+FFFD), never allowed to abort the output with an exception.
inline std::string DumpJson(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace platformctl
