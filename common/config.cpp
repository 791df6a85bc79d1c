#include "common/config.h"

#include <unistd.h>

#include <arpa/inet.h>

#include <cctype>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

extern char** environ;

namespace common {
namespace {

std::vector<std::string> SplitComma(const std::string& s) {
  std::vector<std::string> out;
  std::string item;
  std::istringstream in(s);
  while (std::getline(in, item, ',')) {
    auto b = item.find_first_not_of(" \t");
    auto e = item.find_last_not_of(" \t");
    if (b == std::string::npos) {
      out.emplace_back();
      continue;
    }
    out.push_back(item.substr(b, e - b + 1));
  }
  return out;
}

bool ValidPort(const std::string& s) {
  if (s.empty() || s.size() > 5) return false;
  int port = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), port);
  return ec == std::errc() && p == s.data() + s.size() && port >= 0 && port <= 65535;
}

bool ValidHostPort(const std::string& s) {
  auto colon = s.rfind(':');
  if (colon == std::string::npos || colon == 0) return false;
  return ValidPort(s.substr(colon + 1));
}

}  // namespace

std::optional<Millis> ParseDuration(const std::string& text) {
  if (text.empty()) return std::nullopt;
  int64_t total = 0;
  size_t i = 0;
  while (i < text.size()) {
    size_t start = i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
    if (i == start || i - start > 12) return std::nullopt;
    int64_t n = std::stoll(text.substr(start, i - start));
    size_t ustart = i;
    while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
    std::string unit = text.substr(ustart, i - ustart);
    int64_t ms_per = 0;
    if (unit == "ms")
      ms_per = 1;
    else if (unit == "s")
      ms_per = 1000;
    else if (unit == "m")
      ms_per = 60'000;
    else if (unit == "h")
      ms_per = 3'600'000;
    else if (unit == "d")
      ms_per = 86'400'000;
    else
      return std::nullopt;
    total += n * ms_per;
  }
  return Millis(total);
}

std::string FormatDuration(Millis d) {
  int64_t ms = d.count();
  if (ms != 0 && ms % 86'400'000 == 0) return std::to_string(ms / 86'400'000) + "d";
  if (ms != 0 && ms % 3'600'000 == 0) return std::to_string(ms / 3'600'000) + "h";
  if (ms != 0 && ms % 60'000 == 0) return std::to_string(ms / 60'000) + "m";
  if (ms != 0 && ms % 1000 == 0) return std::to_string(ms / 1000) + "s";
  return std::to_string(ms) + "ms";
}

std::optional<int64_t> ParseSize(std::string_view text) {
  int64_t n = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end == text.data() || n < 0) return std::nullopt;
  const std::string_view unit(end, static_cast<size_t>(text.data() + text.size() - end));
  int shift = 0;
  if (unit == "KiB") {
    shift = 10;
  } else if (unit == "MiB") {
    shift = 20;
  } else if (unit == "GiB") {
    shift = 30;
  } else if (!unit.empty() && unit != "B") {
    return std::nullopt;
  }
  if (n > (std::numeric_limits<int64_t>::max() >> shift)) return std::nullopt;
  return n << shift;
}

std::string FormatSize(int64_t bytes) {
  if (bytes != 0 && bytes % (int64_t{1} << 30) == 0) return std::to_string(bytes >> 30) + "GiB";
  if (bytes != 0 && bytes % (int64_t{1} << 20) == 0) return std::to_string(bytes >> 20) + "MiB";
  if (bytes != 0 && bytes % (int64_t{1} << 10) == 0) return std::to_string(bytes >> 10) + "KiB";
  return std::to_string(bytes);
}

ConfigReader::ConfigReader(std::map<std::string, std::string> env) : env_(std::move(env)) {}

ConfigReader ConfigReader::FromProcess() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return ConfigReader(std::move(env));
}

void ConfigReader::Note(const std::string& name, const std::string& fallback) {
  for (auto& [n, d] : variables_) {
    if (n == name) {
      if (d.empty()) d = fallback;
      return;
    }
  }
  variables_.emplace_back(name, fallback);
}

std::optional<std::string> ConfigReader::Optional(const std::string& name) {
  Note(name, "");
  auto it = env_.find(name);
  if (it == env_.end() || it->second.empty()) return std::nullopt;
  return it->second;
}

std::string ConfigReader::String(const std::string& name, const std::string& fallback) {
  Note(name, fallback);
  return Optional(name).value_or(fallback);
}

void ConfigReader::Fail(const std::string& name, const std::string& why) {
  errors_.push_back(name + ": " + why);
}

int64_t ConfigReader::Int(const std::string& name, int64_t fallback, int64_t min, int64_t max) {
  Note(name, std::to_string(fallback));
  auto v = Optional(name);
  if (!v) return fallback;
  int64_t n = 0;
  auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
  if (ec != std::errc() || p != v->data() + v->size()) {
    Fail(name, "'" + *v + "' is not a whole number");
    return fallback;
  }
  if (n < min || n > max) {
    Fail(name, "'" + *v + "' is outside " + std::to_string(min) + ".." + std::to_string(max));
    return fallback;
  }
  return n;
}

Millis ConfigReader::Duration(const std::string& name, Millis fallback, Millis min, Millis max) {
  Note(name, FormatDuration(fallback));
  auto v = Optional(name);
  if (!v) return fallback;
  auto d = ParseDuration(*v);
  if (!d) {
    Fail(name, "'" + *v + "' is not a duration (examples: 500ms, 30s, 15m, 72h, 7d)");
    return fallback;
  }
  if (*d < min || *d > max) {
    Fail(name, "'" + *v + "' is outside " + FormatDuration(min) + ".." + FormatDuration(max));
    return fallback;
  }
  return *d;
}

int64_t ConfigReader::Size(const std::string& name, int64_t fallback, int64_t min, int64_t max) {
  Note(name, FormatSize(fallback));
  auto v = Optional(name);
  if (!v) return fallback;
  auto n = ParseSize(*v);
  if (!n) {
    Fail(name, "'" + *v + "' is not a size (a number of bytes, or a number and KiB, MiB or GiB)");
    return fallback;
  }
  if (*n < min || *n > max) {
    Fail(name, "'" + *v + "' is outside " + FormatSize(min) + ".." + FormatSize(max));
    return fallback;
  }
  return *n;
}

std::string ConfigReader::OneOf(const std::string& name, const std::string& fallback,
                                const std::vector<std::string>& allowed) {
  Note(name, fallback);
  auto v = Optional(name);
  if (!v) return fallback;
  for (const auto& a : allowed) {
    if (*v == a) return *v;
  }
  std::string list;
  for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
  Fail(name, "'" + *v + "' is not one of: " + list);
  return fallback;
}

std::string RedactUrl(const std::string& url) {
  auto scheme = url.find("://");
  size_t start = scheme == std::string::npos ? 0 : scheme + 3;
  auto end = url.find_first_of("/?#", start);
  std::string authority = url.substr(start, end == std::string::npos ? end : end - start);
  auto at = authority.rfind('@');
  if (at == std::string::npos) return url;
  return url.substr(0, start) + "***" + url.substr(start + at);
}

std::vector<std::string> ConfigReader::UrlList(const std::string& name, const std::string& fallback,
                                               const std::vector<std::string>& schemes) {
  auto raw = String(name, fallback);
  std::vector<std::string> out;
  for (const auto& url : SplitComma(raw)) {
    bool scheme_ok = false;
    std::string rest;
    for (const auto& s : schemes) {
      if (url.rfind(s + "://", 0) == 0) {
        scheme_ok = true;
        rest = url.substr(s.size() + 3);
      }
    }
    std::string hostport = rest.substr(0, rest.find_first_of("/?#"));
    if (hostport.find('@') != std::string::npos) {
      Fail(name, "'" + RedactUrl(url) +
                     "' carries user info (user:password@): refused, it would be printed "
                     "wherever the URL is (logs, metric labels)");
      continue;
    }
    if (!scheme_ok || !ValidHostPort(hostport)) {
      std::string list;
      for (const auto& s : schemes) list += (list.empty() ? "" : " or ") + s + "://host:port";
      Fail(name, "'" + RedactUrl(url) + "' is not a URL of the form " + list);
      continue;
    }
    out.push_back(url.back() == '/' ? url.substr(0, url.size() - 1) : url);
  }
  if (out.empty() && errors_.empty()) Fail(name, "needs at least one URL");
  return out;
}

std::string ConfigReader::HostPort(const std::string& name, const std::string& fallback) {
  auto v = String(name, fallback);
  if (!ValidHostPort(v)) {
    Fail(name, "'" + v + "' is not host:port");
    return fallback;
  }
  return v;
}

std::string ConfigReader::ListenAddress(const std::string& name, const std::string& fallback) {
  auto v = String(name, fallback);
  auto colon = v.rfind(':');
  in_addr addr{};
  if (colon == std::string::npos || !ValidPort(v.substr(colon + 1)) ||
      inet_pton(AF_INET, v.substr(0, colon).c_str(), &addr) != 1) {
    Fail(name, "'" + v + "' is not IPv4-address:port (e.g. 0.0.0.0:9464, 127.0.0.1:0)");
    return fallback;
  }
  return v;
}

std::string ConfigReader::ReadableFile(const std::string& name) {
  auto v = Optional(name);
  if (!v) return "";
  std::error_code ec;
  std::ifstream in(*v);
  char c;
  // A directory opens but does not read; a missing or forbidden file does not open.
  if (!std::filesystem::is_regular_file(*v, ec) || !in || !in.get(c)) {
    Fail(name, "'" + *v + "' is not a readable file");
    return "";
  }
  return *v;
}

void ConfigReader::Finish() const {
  if (errors_.empty()) return;
  std::string msg = "bad configuration:";
  for (const auto& e : errors_) msg += "\n  " + e;
  throw ConfigError(msg);
}

CommonConfig ReadCommonConfig(ConfigReader& r, const std::string& default_metrics_listen) {
  CommonConfig c;
  c.nats_urls = r.UrlList("NATS_URL", "nats://127.0.0.1:4222", {"nats", "tls"});
  int tls_urls = 0;
  for (const auto& u : c.nats_urls) tls_urls += u.rfind("tls://", 0) == 0 ? 1 : 0;
  // One connection is TLS or not for every server it may reconnect to: no mixing.
  if (tls_urls > 0 && tls_urls < static_cast<int>(c.nats_urls.size())) {
    r.Fail("NATS_URL", "mixes nats:// and tls:// servers: use tls:// for all or none");
  }
  c.nats_tls = tls_urls > 0;
  c.nats_ca = r.ReadableFile("NATS_CA");
  c.nats_cert = r.ReadableFile("NATS_CERT");
  c.nats_key = r.ReadableFile("NATS_KEY");
  if (r.Optional("NATS_CERT").has_value() != r.Optional("NATS_KEY").has_value()) {
    r.Fail(r.Optional("NATS_CERT") ? "NATS_KEY" : "NATS_CERT",
           "NATS_CERT and NATS_KEY go together (a client certificate and its key)");
  }
  if (!c.nats_tls && (r.Optional("NATS_CA") || r.Optional("NATS_CERT") || r.Optional("NATS_KEY"))) {
    // A plain nats:// server would be used without TLS, the files ignored: say so now.
    r.Fail("NATS_URL", "NATS_CA, NATS_CERT and NATS_KEY need tls:// URLs");
  }
  c.nats_connect_timeout = r.Duration("NATS_CONNECT_TIMEOUT", c.nats_connect_timeout,
                                      std::chrono::milliseconds(100), std::chrono::minutes(1));
  c.nats_user = r.String("NATS_USER", "");
  c.nats_password = r.String("NATS_PASSWORD", "");
  c.nats_creds = r.ReadableFile("NATS_CREDS");
  c.nats_inbox_prefix = r.String("NATS_INBOX_PREFIX", "");
  if (c.nats_inbox_prefix.find_first_of(" \t.*>") != std::string::npos) {
    r.Fail("NATS_INBOX_PREFIX",
           "'" + c.nats_inbox_prefix + "' must be one subject token (no '.', '*', '>' or spaces)");
  }
  if (!c.nats_user.empty() && c.nats_password.empty()) {
    r.Fail("NATS_PASSWORD", "is required when NATS_USER is set");
  }
  if (c.nats_user.empty() && !c.nats_password.empty()) {
    r.Fail("NATS_USER", "is required when NATS_PASSWORD is set");
  }
  if (r.Optional("NATS_CREDS") && !c.nats_user.empty()) {
    r.Fail("NATS_CREDS", "set either NATS_CREDS or NATS_USER, not both");
  }
  if (!default_metrics_listen.empty())
    c.metrics_listen = r.ListenAddress("METRICS_LISTEN", default_metrics_listen);
  c.log_level =
      r.OneOf("LOG_LEVEL", "info", {"trace", "debug", "info", "warn", "error", "critical", "off"});
  c.log_format = r.OneOf("LOG_FORMAT", "text", {"text", "json"});
  char host[256] = {0};
  if (gethostname(host, sizeof(host) - 1) != 0) host[0] = 0;
  c.instance = r.String("INSTANCE_NAME", host[0] ? host : "unknown");
  return c;
}

TopologyConfig ReadTopologyConfig(ConfigReader& r) {
  using std::chrono::hours;
  using std::chrono::seconds;
  TopologyConfig t;
  t.replicas = static_cast<int>(r.Int("STREAM_REPLICAS", t.replicas, 1, 5));
  t.duplicate_window =
      r.Duration("STREAM_DUPLICATE_WINDOW", t.duplicate_window, seconds(1), hours(24 * 7));
  t.web_events_max_age =
      r.Duration("WEB_EVENTS_MAX_AGE", t.web_events_max_age, seconds(1), hours(24 * 365));
  t.api_metrics_max_age =
      r.Duration("API_METRICS_MAX_AGE", t.api_metrics_max_age, seconds(1), hours(24 * 365));
  t.web_dlq_max_age = r.Duration("WEB_DLQ_MAX_AGE", t.web_dlq_max_age, seconds(1), hours(24 * 365));
  t.api_dlq_max_age = r.Duration("API_DLQ_MAX_AGE", t.api_dlq_max_age, seconds(1), hours(24 * 365));
  t.lock_ttl = r.Duration("LOCK_TTL", t.lock_ttl, seconds(2), hours(1));
  t.visit_state_ttl = r.Duration("VISIT_STATE_TTL", t.visit_state_ttl, seconds(1), hours(24 * 30));
  t.stored_ids_ttl = r.Duration("STORED_IDS_TTL", t.stored_ids_ttl, seconds(1), hours(24 * 365));
  // Sizes: at least 64 KiB (a test fills a stream of 256 KiB), at most 16 TiB.
  constexpr int64_t kMin = int64_t{64} << 10, kMax = int64_t{16} << 40;
  t.web_events_max_bytes = r.Size("WEB_EVENTS_MAX_BYTES", t.web_events_max_bytes, kMin, kMax);
  t.api_metrics_max_bytes = r.Size("API_METRICS_MAX_BYTES", t.api_metrics_max_bytes, kMin, kMax);
  t.web_dlq_max_bytes = r.Size("WEB_DLQ_MAX_BYTES", t.web_dlq_max_bytes, kMin, kMax);
  t.api_dlq_max_bytes = r.Size("API_DLQ_MAX_BYTES", t.api_dlq_max_bytes, kMin, kMax);
  t.visit_state_max_bytes = r.Size("VISIT_STATE_MAX_BYTES", t.visit_state_max_bytes, kMin, kMax);
  t.stored_ids_max_bytes = r.Size("STORED_IDS_MAX_BYTES", t.stored_ids_max_bytes, kMin, kMax);
  if (t.stored_ids_ttl <= t.web_events_max_age) {
    r.Fail("STORED_IDS_TTL", "must be longer than WEB_EVENTS_MAX_AGE (" +
                                 FormatDuration(t.web_events_max_age) +
                                 "), or a redelivered event could be sent twice");
  }
  if (t.duplicate_window > t.web_events_max_age || t.duplicate_window > t.api_metrics_max_age) {
    r.Fail("STREAM_DUPLICATE_WINDOW", "must not exceed the streams' max age");
  }
  return t;
}

}  // namespace common
