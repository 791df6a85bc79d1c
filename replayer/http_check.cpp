#include "replayer/http_check.h"

#include <string>

namespace replayer {
namespace {

bool IsTchar(unsigned char c) {
  if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return true;
  return c != 0 &&
         std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
}

// The first byte that is a C0 control (tab allowed when `tab_ok`) or DEL, as its position.
size_t FirstControl(std::string_view s, bool tab_ok) {
  for (size_t i = 0; i < s.size(); ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if ((c < 0x20 && !(tab_ok && c == '\t')) || c == 0x7f) return i;
  }
  return std::string_view::npos;
}

std::string Hex(unsigned char c) {
  const char* digits = "0123456789ABCDEF";
  return std::string("0x") + digits[c >> 4] + digits[c & 15];
}

}  // namespace

bool IsValidHeaderValue(std::string_view value) {
  return FirstControl(value, true) == std::string_view::npos;
}

bool IsValidHeaderName(std::string_view name) {
  if (name.empty()) return false;
  for (char c : name)
    if (!IsTchar(static_cast<unsigned char>(c))) return false;
  return true;
}

common::Status CheckRequest(const HttpRequest& request) {
  // A URL comes from the configuration, but a space or control in it would still split the
  // request line: refused the same way.
  for (char ch : request.url) {
    auto c = static_cast<unsigned char>(ch);
    if (c <= 0x20 || c == 0x7f)
      return common::Error::Invalid("the URL holds a space or control character (" + Hex(c) +
                                    "); not sent");
  }
  for (const auto& [name, value] : request.headers) {
    if (!IsValidHeaderName(name))
      return common::Error::Invalid("a header name is not an HTTP token; not sent");
    size_t at = FirstControl(value, true);
    if (at != std::string_view::npos)
      return common::Error::Invalid("header " + name + " holds a control character (" +
                                    Hex(static_cast<unsigned char>(value[at])) + " at byte " +
                                    std::to_string(at) + "); not sent");
  }
  return common::Status::Ok();
}

}  // namespace replayer
