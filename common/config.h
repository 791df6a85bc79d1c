// Configuration from environment variables, validated at start-up.
//
// ConfigReader reads from an injected map (tests pass their own; services pass the process
// environment) and collects every problem before failing, so an operator sees all bad variables
// at once. Finish() throws ConfigError: a start-up error, the one place exceptions are used.
// Not thread-safe; use it on the main thread before any worker starts.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace common {

using Millis = std::chrono::milliseconds;

class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Parses "500ms", "30s", "15m", "72h", "7d" and sums like "1h30m". Nullopt when malformed.
std::optional<Millis> ParseDuration(const std::string& text);
std::string FormatDuration(Millis d);

// A size as written in the environment: a number of bytes, or a number followed by B, KiB, MiB
// or GiB ("64MiB"). Nullopt when malformed or beyond int64. Every size setting reads through
// ConfigReader::Size, so every one takes the units.
std::optional<int64_t> ParseSize(std::string_view text);
// The largest unit that divides it exactly: 64MiB, 1536KiB, 1000 (bytes).
std::string FormatSize(int64_t bytes);

class ConfigReader {
 public:
  explicit ConfigReader(std::map<std::string, std::string> env);
  static ConfigReader FromProcess();

  std::string String(const std::string& name, const std::string& fallback);
  std::optional<std::string> Optional(const std::string& name);
  int64_t Int(const std::string& name, int64_t fallback, int64_t min, int64_t max);
  Millis Duration(const std::string& name, Millis fallback, Millis min, Millis max);
  // A size (ParseSize); --help shows the default with its unit.
  int64_t Size(const std::string& name, int64_t fallback, int64_t min, int64_t max);
  std::string OneOf(const std::string& name, const std::string& fallback,
                    const std::vector<std::string>& allowed);
  // A comma list of URLs, each with one of the schemes and a host:port. A URL with user info
  // (user:password@) is refused: a password there would be printed wherever the URL is (logs,
  // metric labels); the error shows the URL with the user info replaced by "***".
  std::vector<std::string> UrlList(const std::string& name, const std::string& fallback,
                                   const std::vector<std::string>& schemes);
  // host:port with a numeric port.
  std::string HostPort(const std::string& name, const std::string& fallback);
  // An IPv4 address and a port ("0.0.0.0:9464"; port 0: any free port), where we listen.
  std::string ListenAddress(const std::string& name, const std::string& fallback);
  // A path to a file this process can read (unset: ""); a missing or unreadable one fails.
  std::string ReadableFile(const std::string& name);

  // Every variable asked for so far, in order, with its default as text ("" when none): what a
  // binary's --help lists, so the list cannot drift from what it reads.
  const std::vector<std::pair<std::string, std::string>>& variables() const { return variables_; }

  void Fail(const std::string& name, const std::string& why);
  // Throws ConfigError listing every problem found so far.
  void Finish() const;
  const std::vector<std::string>& errors() const { return errors_; }

 private:
  void Note(const std::string& name, const std::string& fallback);

  std::map<std::string, std::string> env_;
  std::vector<std::string> errors_;
  std::vector<std::pair<std::string, std::string>> variables_;
};

// What every binary reads: how to reach NATS, where to serve /metrics, how to log.
struct CommonConfig {
  std::vector<std::string> nats_urls;
  std::string nats_user;
  std::string nats_password;
  std::string nats_creds;
  // TLS: every NATS_URL is tls://. CA file (else the system's trust store), and a client
  // certificate with its key for mutual TLS (both or neither).
  bool nats_tls = false;
  std::string nats_ca;
  std::string nats_cert;
  std::string nats_key;
  // One attempt to connect to one server (TCP, TLS, the NATS handshake). It also bounds how long
  // a SIGTERM waits for an attempt under way while a server is unreachable.
  Millis nats_connect_timeout{1000};
  // Replies come to "<prefix>.<id>" (nats.c's default "_INBOX" when empty). A deployment gives
  // each user its own prefix and allows it only that, so no user can read another's replies.
  std::string nats_inbox_prefix;
  std::string metrics_listen;
  std::string log_level;
  std::string log_format;
  std::string instance;  // host name used in logs and leases
};

// default_metrics_listen empty: METRICS_LISTEN is not read (a tool that serves no /metrics).
CommonConfig ReadCommonConfig(ConfigReader& r, const std::string& default_metrics_listen);

// The URL with any user info (user:password@) replaced by "***@", for messages.
std::string RedactUrl(const std::string& url);

// The stream and bucket settings of docs/contract.md §2, shared by platformctl init and the
// services.
struct TopologyConfig {
  int replicas = 1;
  Millis duplicate_window = std::chrono::minutes(2);
  Millis web_events_max_age = std::chrono::hours(72);
  Millis api_metrics_max_age = std::chrono::hours(72);
  Millis web_dlq_max_age = std::chrono::hours(24 * 7);
  Millis api_dlq_max_age = std::chrono::hours(24 * 30);
  Millis lock_ttl = std::chrono::seconds(15);
  Millis visit_state_ttl = std::chrono::hours(24);
  Millis stored_ids_ttl = std::chrono::hours(96);
  // Storage limits (bytes per replica; docs/contract.md §2, "Storage limits"). The work queues
  // and the DLQs refuse a publish when full (discard new); so do the buckets. The defaults
  // reserve 12.5 GiB plus the fixed buckets' 129 MiB per replica (topology::ReservedBytes).
  int64_t web_events_max_bytes = int64_t{4} << 30;
  int64_t api_metrics_max_bytes = int64_t{4} << 30;
  int64_t web_dlq_max_bytes = int64_t{1} << 30;
  int64_t api_dlq_max_bytes = int64_t{1} << 30;
  int64_t visit_state_max_bytes = int64_t{512} << 20;
  int64_t stored_ids_max_bytes = int64_t{2} << 30;
};

TopologyConfig ReadTopologyConfig(ConfigReader& r);

}  // namespace common
