#include "replayer/http_check.h"

#include <array>
#include <bit>
#include <string>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace replayer {
namespace {

// RFC 9110 tchar, as a table: every header name of every request and response is checked.
constexpr std::array<bool, 256> kTchar = [] {
  std::array<bool, 256> t{};
  for (int c = '0'; c <= '9'; ++c) t[c] = true;
  for (int c = 'a'; c <= 'z'; ++c) t[c] = true;
  for (int c = 'A'; c <= 'Z'; ++c) t[c] = true;
  for (char c : std::string_view("!#$%&'*+-.^_`|~")) t[static_cast<unsigned char>(c)] = true;
  return t;
}();

bool IsControl(unsigned char c, bool tab_ok) {
  return (c < 0x20 && !(tab_ok && c == '\t')) || c == 0x7f;
}

// The first byte that is a C0 control (tab allowed when `tab_ok`) or DEL, as its position.
// Runs on every header of every send (a visit's token is some 300 bytes): 16 bytes at a time
// with SSE2, which every x86-64 has; byte by byte elsewhere and for the last few bytes.
size_t FirstControl(std::string_view s, bool tab_ok) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  size_t i = 0;
#if defined(__SSE2__)
  const __m128i k1f = _mm_set1_epi8(0x1f), k7f = _mm_set1_epi8(0x7f), ktab = _mm_set1_epi8('\t');
  for (; i + 16 <= s.size(); i += 16) {
    __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
    // x <= 0x1f (unsigned) exactly when min(x, 0x1f) == x.
    __m128i ctl = _mm_or_si128(_mm_cmpeq_epi8(_mm_min_epu8(x, k1f), x), _mm_cmpeq_epi8(x, k7f));
    auto mask = static_cast<unsigned>(_mm_movemask_epi8(ctl));
    if (mask != 0 && tab_ok)
      mask &= ~static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(x, ktab)));
    if (mask != 0) return i + static_cast<size_t>(std::countr_zero(mask));
  }
#endif
  for (; i < s.size(); ++i)
    if (IsControl(p[i], tab_ok)) return i;
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
    if (!kTchar[static_cast<unsigned char>(c)]) return false;
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
