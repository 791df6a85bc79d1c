#include "metricswriter/otlp_text.h"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace mw::text {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD in UTF-8
}  // namespace

std::string Clean(std::string_view s, uint64_t* nuls) {
  if (s.find('\0') == std::string_view::npos) return std::string(s);
  std::string out;
  out.reserve(s.size() + 8);
  for (char c : s) {
    if (c == '\0') {
      out += kReplacement;
      ++*nuls;
    } else {
      out += c;
    }
  }
  return out;
}

void AppendString(std::string& out, std::string_view s, uint64_t* nuls) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  // Runs of plain characters are appended whole (a character at a time showed in the profile).
  auto plain = [](char c) {
    return c != '"' && c != '\\' && static_cast<unsigned char>(c) >= 0x20;
  };
  while (!s.empty()) {
    size_t run = 0;
    while (run < s.size() && plain(s[run])) ++run;
    out.append(s.data(), run);
    if (run == s.size()) break;
    const char c = s[run];
    s.remove_prefix(run + 1);
    auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u == 0) {
      out += kReplacement;
      ++*nuls;
    } else {  // another control character
      out += "\\u00";
      out += kHex[u >> 4];
      out += kHex[u & 15];
    }
  }
  out += '"';
}

void AppendDouble(std::string& out, double d) {
  if (std::isnan(d)) {
    out += "\"NaN\"";
    return;
  }
  if (std::isinf(d)) {
    out += d > 0 ? "\"Infinity\"" : "\"-Infinity\"";
    return;
  }
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), d);
  std::string_view v(buf, static_cast<size_t>(end - buf));
  out += v;
  if (v.find_first_of(".e") == std::string_view::npos) out += ".0";
}

void AppendInt(std::string& out, int64_t v) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  out.append(buf, end);
}

std::string Object(std::vector<Member>& members, uint64_t* nuls) {
  std::string out;
  AppendObject(out, members, nuls);
  return out;
}

void AppendObject(std::string& out, std::vector<Member>& members, uint64_t* nuls) {
  auto less = [](const Member& a, const Member& b) { return a.key < b.key; };
  if (members.size() <= 16) {
    // Insertion sort for the usual few attributes: stable, and without the buffer
    // std::stable_sort allocates, which showed in the writer's profile.
    for (size_t i = 1; i < members.size(); ++i) {
      for (size_t j = i; j > 0 && less(members[j], members[j - 1]); --j) {
        std::swap(members[j], members[j - 1]);
      }
    }
  } else {
    std::stable_sort(members.begin(), members.end(), less);
  }
  size_t size = 2;
  for (const auto& m : members) size += m.key.size() + m.value.size() + 4;
  out.reserve(out.size() + size);
  out += '{';
  for (size_t i = 0; i < members.size(); ++i) {
    if (i > 0) out += ',';
    AppendString(out, members[i].key, nuls);
    out += ':';
    out += members[i].value;
  }
  out += '}';
}

}  // namespace mw::text
