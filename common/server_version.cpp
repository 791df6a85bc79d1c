#include "common/server_version.h"

#include <charconv>
#include <tuple>

#include <simdjson.h>

namespace common::server_version {

namespace {

// One non-negative decimal number of at most 6 digits from the front of `s`.
bool Number(std::string_view& s, int* out) {
  size_t n = 0;
  while (n < s.size() && n < 7 && s[n] >= '0' && s[n] <= '9') ++n;
  if (n == 0 || n > 6) return false;
  std::from_chars(s.data(), s.data() + n, *out);
  s.remove_prefix(n);
  return true;
}

bool Dot(std::string_view& s) {
  if (s.empty() || s.front() != '.') return false;
  s.remove_prefix(1);
  return true;
}

// Semver's pre-release or build identifiers: [0-9A-Za-z-.]+, at most 64 characters.
bool Identifiers(std::string_view s) {
  if (s.empty() || s.size() > 64) return false;
  for (char c : s) {
    const bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    c == '-' || c == '.';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

std::optional<Version> Parse(std::string_view text) {
  Version v;
  std::string_view s = text;
  if (!s.empty() && (s.front() == 'v' || s.front() == 'V')) s.remove_prefix(1);
  if (!Number(s, &v.major) || !Dot(s) || !Number(s, &v.minor) || !Dot(s) || !Number(s, &v.patch)) {
    return std::nullopt;
  }
  const size_t plus = s.find('+');
  std::string_view build = plus == std::string_view::npos ? "" : s.substr(plus + 1);
  std::string_view pre = s.substr(0, plus);
  if (plus != std::string_view::npos && !Identifiers(build)) return std::nullopt;
  if (!pre.empty()) {
    if (pre.front() != '-' || !Identifiers(pre.substr(1))) return std::nullopt;
    v.prerelease = true;
  }
  v.text = std::string(text.substr(text.front() == 'v' || text.front() == 'V' ? 1 : 0));
  return v;
}

bool Less(const Version& a, const Version& b) {
  auto ta = std::tie(a.major, a.minor, a.patch);
  auto tb = std::tie(b.major, b.minor, b.patch);
  if (ta != tb) return ta < tb;
  return a.prerelease && !b.prerelease;
}

Version Minimum() { return Version{kMinMajor, kMinMinor, kMinPatch, false, std::string(kMinText)}; }

bool Supported(const Version& v) { return !Less(v, Minimum()); }

std::optional<std::string> FromInfoLine(std::string_view line) {
  constexpr std::string_view kInfo = "INFO ";
  if (line.substr(0, kInfo.size()) != kInfo) return std::nullopt;
  line.remove_prefix(kInfo.size());
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(line.data(), line.size(), true).get(doc) != simdjson::SUCCESS) {
    return std::nullopt;
  }
  std::string_view version;
  if (doc["version"].get_string().get(version) != simdjson::SUCCESS) return std::nullopt;
  return std::string(version);
}

std::string Refusal(const Version& found, std::string_view where) {
  return "nats-server " + found.text + " at " + std::string(where) + " is older than " +
         std::string(kMinText) + ", the oldest this release supports (" +
         std::string(kRangeStatedIn) + "); upgrade the server (the ansible role pins a tested " +
         "one) before provisioning";
}

std::optional<Endpoint> EndpointOf(std::string_view url) {
  if (const size_t scheme = url.find("://"); scheme != std::string_view::npos) {
    url.remove_prefix(scheme + 3);
  }
  url = url.substr(0, url.find('/'));
  if (const size_t at = url.rfind('@'); at != std::string_view::npos) url.remove_prefix(at + 1);
  Endpoint e;
  std::string_view port;
  if (!url.empty() && url.front() == '[') {
    const size_t close = url.find(']');
    if (close == std::string_view::npos || url.substr(close + 1, 1) != ":") return std::nullopt;
    e.host = std::string(url.substr(1, close - 1));
    port = url.substr(close + 2);
  } else {
    const size_t colon = url.rfind(':');
    if (colon == std::string_view::npos) return std::nullopt;
    e.host = std::string(url.substr(0, colon));
    port = url.substr(colon + 1);
  }
  int n = 0;
  std::string_view digits = port;
  if (e.host.empty() || !Number(digits, &n) || !digits.empty() || n <= 0 || n > 65535) {
    return std::nullopt;
  }
  e.port = std::string(port);
  return e;
}

}  // namespace common::server_version
