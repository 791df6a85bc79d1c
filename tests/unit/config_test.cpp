#include "common/config.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>

#include "replayer/engine.h"

using common::ConfigError;
using common::ConfigReader;
using common::Millis;
using common::ParseDuration;
using Env = std::map<std::string, std::string>;

TEST_CASE("durations parse in every unit and reject junk", "[config]") {
  CHECK(ParseDuration("500ms") == Millis(500));
  CHECK(ParseDuration("30s") == Millis(30'000));
  CHECK(ParseDuration("15m") == Millis(900'000));
  CHECK(ParseDuration("72h") == Millis(72LL * 3'600'000));
  CHECK(ParseDuration("7d") == Millis(7LL * 86'400'000));
  CHECK(ParseDuration("1h30m") == Millis(5'400'000));
  CHECK_FALSE(ParseDuration(""));
  CHECK_FALSE(ParseDuration("10"));
  CHECK_FALSE(ParseDuration("h"));
  CHECK_FALSE(ParseDuration("5 s"));
  CHECK_FALSE(ParseDuration("-5s"));
  CHECK_FALSE(ParseDuration("5w"));
  CHECK(common::FormatDuration(Millis(72LL * 3'600'000)) == "3d");
  CHECK(common::FormatDuration(Millis(90'000)) == "90s");
}

TEST_CASE("defaults apply when nothing is set", "[config]") {
  ConfigReader r({});
  auto c = common::ReadCommonConfig(r, "127.0.0.1:9464");
  auto t = common::ReadTopologyConfig(r);
  REQUIRE_NOTHROW(r.Finish());
  CHECK(c.nats_urls == std::vector<std::string>{"nats://127.0.0.1:4222"});
  CHECK(c.log_level == "info");
  CHECK(c.log_format == "text");
  CHECK(t.replicas == 1);
  CHECK(t.web_events_max_age == std::chrono::hours(72));
  CHECK(t.web_dlq_max_age == std::chrono::hours(24 * 7));
  CHECK(t.api_dlq_max_age == std::chrono::hours(24 * 30));
  CHECK(t.web_events_max_bytes == int64_t{4} << 30);
  CHECK(t.web_dlq_max_bytes == int64_t{1} << 30);
  CHECK(t.stored_ids_max_bytes == int64_t{2} << 30);
}

TEST_CASE("storage limits read sizes with units and name a bad one", "[config]") {
  ConfigReader r({{"WEB_EVENTS_MAX_BYTES", "256KiB"},
                  {"API_METRICS_MAX_BYTES", "10GiB"},
                  {"WEB_DLQ_MAX_BYTES", "1073741824"},
                  {"VISIT_STATE_MAX_BYTES", "1KiB"},
                  {"STORED_IDS_MAX_BYTES", "2GB"}});
  auto t = common::ReadTopologyConfig(r);
  CHECK(t.web_events_max_bytes == 256 << 10);
  CHECK(t.api_metrics_max_bytes == int64_t{10} << 30);
  CHECK(t.web_dlq_max_bytes == int64_t{1} << 30);
  try {
    r.Finish();
    FAIL("Finish() should have thrown");
  } catch (const ConfigError& e) {
    std::string msg = e.what();
    CHECK(msg.find("VISIT_STATE_MAX_BYTES: '1KiB' is outside 64KiB..16384GiB") !=
          std::string::npos);
    CHECK(msg.find("STORED_IDS_MAX_BYTES: '2GB' is not a size") != std::string::npos);
  }
  CHECK(common::FormatSize(int64_t{4} << 30) == "4GiB");
  CHECK(common::FormatSize(1536 << 10) == "1536KiB");
  CHECK(common::FormatSize(1000) == "1000");
}

TEST_CASE("every bad variable is named in one start-up error", "[config]") {
  ConfigReader r({{"NATS_URL", "nats://a:4222,http://b:1"},
                  {"LOG_LEVEL", "verbose"},
                  {"LOG_FORMAT", "xml"},
                  {"METRICS_LISTEN", "localhost"},
                  {"STREAM_REPLICAS", "7"},
                  {"WEB_EVENTS_MAX_AGE", "three days"}});
  auto c = common::ReadCommonConfig(r, "127.0.0.1:9464");
  common::ReadTopologyConfig(r);
  try {
    r.Finish();
    FAIL("Finish() should have thrown");
  } catch (const ConfigError& e) {
    std::string msg = e.what();
    CHECK(msg.find("NATS_URL: 'http://b:1'") != std::string::npos);
    CHECK(msg.find("LOG_LEVEL: 'verbose'") != std::string::npos);
    CHECK(msg.find("LOG_FORMAT: 'xml'") != std::string::npos);
    CHECK(msg.find("METRICS_LISTEN") != std::string::npos);
    CHECK(msg.find("STREAM_REPLICAS: '7' is outside 1..5") != std::string::npos);
    CHECK(msg.find("WEB_EVENTS_MAX_AGE") != std::string::npos);
  }
  CHECK(c.nats_urls == std::vector<std::string>{"nats://a:4222"});
}

TEST_CASE("NATS identity: user needs password, creds must exist, not both", "[config]") {
  {
    ConfigReader r(Env{{"NATS_USER", "replayer"}});
    common::ReadCommonConfig(r, "127.0.0.1:1");
    CHECK_THROWS_WITH(r.Finish(), Catch::Contains("NATS_PASSWORD: is required"));
  }
  {
    ConfigReader r(Env{{"NATS_CREDS", "/nonexistent/x.creds"}});
    common::ReadCommonConfig(r, "127.0.0.1:1");
    CHECK_THROWS_WITH(r.Finish(), Catch::Contains("is not a readable file"));
  }
}

TEST_CASE("NATS inbox prefix: one subject token or nothing", "[config]") {
  {
    ConfigReader r(Env{{"NATS_INBOX_PREFIX", "_INBOX_replayer"}});
    auto c = common::ReadCommonConfig(r, "127.0.0.1:1");
    REQUIRE_NOTHROW(r.Finish());
    CHECK(c.nats_inbox_prefix == "_INBOX_replayer");
  }
  for (const char* bad : {"_INBOX.replayer", "_INBOX_*", "in box", "_INBOX>"}) {
    ConfigReader r(Env{{"NATS_INBOX_PREFIX", bad}});
    common::ReadCommonConfig(r, "127.0.0.1:1");
    CHECK_THROWS_WITH(r.Finish(), Catch::Contains("NATS_INBOX_PREFIX") &&
                                      Catch::Contains("must be one subject token"));
  }
}

TEST_CASE("a stored-ids TTL not longer than the stream max age is refused", "[config]") {
  ConfigReader r(Env{{"STORED_IDS_TTL", "72h"}});
  common::ReadTopologyConfig(r);
  CHECK_THROWS_WITH(r.Finish(), Catch::Contains("STORED_IDS_TTL: must be longer"));
}

TEST_CASE("integers must be whole numbers in range", "[config]") {
  ConfigReader r(Env{{"A", "12x"}, {"B", "99"}, {"C", "5"}});
  CHECK(r.Int("A", 1, 0, 10) == 1);
  CHECK(r.Int("B", 1, 0, 10) == 1);
  CHECK(r.Int("C", 1, 0, 10) == 5);
  CHECK(r.errors().size() == 2);
}

TEST_CASE("sizes take a number of bytes or KiB, MiB, GiB, and are checked against their range",
          "[config]") {
  ConfigReader r(Env{{"A", "1MiB"},
                     {"B", "1048576"},
                     {"C", "64 MiB"},
                     {"D", "512KiB"},
                     {"E", "2GiB"},
                     {"F", "12x"}});
  CHECK(r.Size("A", 7, 1 << 20, int64_t{1} << 40) == (1 << 20));
  CHECK(r.Size("B", 7, 1 << 20, int64_t{1} << 40) == (1 << 20));
  CHECK(r.Size("C", 7, 1 << 20, int64_t{1} << 40) == 7);
  CHECK(r.Size("D", 7, 1 << 20, int64_t{1} << 40) == 7);  // below 1MiB
  CHECK(r.Size("E", 7, 1 << 20, int64_t{1} << 40) == (int64_t{2} << 30));
  CHECK(r.Size("F", 7, 1 << 20, int64_t{1} << 40) == 7);
  CHECK(r.Size("G", int64_t{64} << 20, 1, int64_t{1} << 40) == (int64_t{64} << 20));
  REQUIRE(r.errors().size() == 3);
  CHECK(r.errors()[0] ==
        "C: '64 MiB' is not a size (a number of bytes, or a number and KiB, MiB "
        "or GiB)");
  CHECK(r.errors()[1] == "D: '512KiB' is outside 1MiB..1024GiB");
  CHECK(r.variables().back() == std::pair<std::string, std::string>{"G", "64MiB"});
  CHECK(common::FormatSize(1000) == "1000");
  CHECK(common::FormatSize(1536 * 1024) == "1536KiB");
}

TEST_CASE("every size setting takes units: REPLAYER_MAX_BYTES_IN_FLIGHT=2MiB", "[config]") {
  ConfigReader r(Env{{"REPLAYER_MAX_BYTES_IN_FLIGHT", "2MiB"}});
  auto c = replayer::ReadReplayerConfig(r);
  CHECK(r.errors().empty());
  CHECK(c.max_bytes_in_flight == (2 << 20));
  // Below 2 MiB a fetch of max_message_bytes (1 MiB), parsed, could pass the budget.
  ConfigReader low(Env{{"REPLAYER_MAX_BYTES_IN_FLIGHT", "1MiB"}});
  (void)replayer::ReadReplayerConfig(low);
  CHECK(low.errors().size() == 1);
}

TEST_CASE("a URL with user info is refused and its password never printed", "[config]") {
  for (const char* var : {"UMAMI_URLS", "NATS_URL"}) {
    ConfigReader r(
        Env{{var, "http://a:1,https://umami:s3cr3t-pw@b:3000/x,nats://u:s3cr3t-pw@c:4222"}});
    auto urls = r.UrlList(var, "", {"http", "https", "nats"});
    CHECK(urls == std::vector<std::string>{"http://a:1"});
    REQUIRE(r.errors().size() == 2);
    for (const auto& e : r.errors()) {
      INFO(e);
      CHECK(e.find("s3cr3t") == std::string::npos);
      CHECK(e.find("umami") == std::string::npos);
      CHECK(e.find("carries user info") != std::string::npos);
      CHECK(e.rfind(std::string(var) + ": ", 0) == 0);
    }
    CHECK(r.errors()[0].find("'https://***@b:3000/x'") != std::string::npos);
  }
  // A malformed URL's error does not show user info either.
  ConfigReader r(Env{{"UMAMI_URLS", "ftp://x:s3cr3t-pw@b:1"}});
  r.UrlList("UMAMI_URLS", "", {"http", "https"});
  REQUIRE(r.errors().size() == 1);
  CHECK(r.errors()[0].find("s3cr3t") == std::string::npos);
  CHECK(common::RedactUrl("http://u:p@h:1/a@b") == "http://***@h:1/a@b");
  CHECK(common::RedactUrl("http://h:1/a@b") == "http://h:1/a@b");
}

TEST_CASE("METRICS_LISTEN is an IPv4 address and a port", "[config]") {
  for (const char* ok : {"0.0.0.0:9464", "127.0.0.1:0", "10.1.2.3:65535"}) {
    ConfigReader r(Env{{"METRICS_LISTEN", ok}});
    auto c = common::ReadCommonConfig(r, "127.0.0.1:1");
    CHECK_NOTHROW(r.Finish());
    CHECK(c.metrics_listen == ok);
  }
  for (const char* bad :
       {"localhost:9464", "9464", ":9464", "1.2.3.4:65536", "1.2.3:80", "[::]:80", "1.2.3.4:x"}) {
    ConfigReader r(Env{{"METRICS_LISTEN", bad}});
    common::ReadCommonConfig(r, "127.0.0.1:1");
    CHECK_THROWS_WITH(r.Finish(), Catch::Contains("METRICS_LISTEN: '" + std::string(bad) +
                                                  "' is not IPv4-address:port"));
  }
}

namespace {
// A file with some content in the test's temporary directory.
std::string TempFile(const std::string& name) {
  std::string path = "/tmp/core_config_test_" + std::to_string(getpid()) + "_" + name;
  FILE* f = std::fopen(path.c_str(), "w");
  std::fputs("-----BEGIN CERTIFICATE-----\n", f);
  std::fclose(f);
  return path;
}
}  // namespace

TEST_CASE("NATS TLS: tls:// URLs, CA and client certificate files checked at start", "[config]") {
  std::string ca = TempFile("ca.pem");
  std::string cert = TempFile("cert.pem");
  std::string key = TempFile("key.pem");
  {
    ConfigReader r(Env{{"NATS_URL", "tls://a:4222,tls://b:4222"},
                       {"NATS_CA", ca},
                       {"NATS_CERT", cert},
                       {"NATS_KEY", key}});
    auto c = common::ReadCommonConfig(r, "127.0.0.1:1");
    REQUIRE_NOTHROW(r.Finish());
    CHECK(c.nats_tls);
    CHECK(c.nats_ca == ca);
    CHECK(c.nats_cert == cert);
    CHECK(c.nats_key == key);
  }
  {
    // tls:// without a CA: the system's trust store.
    ConfigReader r(Env{{"NATS_URL", "tls://a:4222"}});
    auto c = common::ReadCommonConfig(r, "127.0.0.1:1");
    REQUIRE_NOTHROW(r.Finish());
    CHECK(c.nats_tls);
    CHECK(c.nats_ca.empty());
  }
  {
    ConfigReader r({});
    CHECK_FALSE(common::ReadCommonConfig(r, "127.0.0.1:1").nats_tls);
  }
  auto fails = [](const Env& env, const std::string& what) {
    ConfigReader r(env);
    common::ReadCommonConfig(r, "127.0.0.1:1");
    CHECK_THROWS_WITH(r.Finish(), Catch::Contains(what));
  };
  fails({{"NATS_URL", "tls://a:4222"}, {"NATS_CA", "/nonexistent/ca.pem"}},
        "NATS_CA: '/nonexistent/ca.pem' is not a readable file");
  fails({{"NATS_URL", "tls://a:4222"}, {"NATS_CA", "/tmp"}},
        "NATS_CA: '/tmp' is not a readable file");
  fails({{"NATS_URL", "tls://a:4222"}, {"NATS_CERT", cert}, {"NATS_KEY", "/nonexistent/k"}},
        "NATS_KEY: '/nonexistent/k' is not a readable file");
  fails({{"NATS_URL", "tls://a:4222"}, {"NATS_CERT", cert}},
        "NATS_KEY: NATS_CERT and NATS_KEY go together");
  fails({{"NATS_URL", "tls://a:4222"}, {"NATS_KEY", key}},
        "NATS_CERT: NATS_CERT and NATS_KEY go together");
  fails({{"NATS_URL", "tls://a:4222,nats://b:4222"}}, "NATS_URL: mixes nats:// and tls://");
  fails({{"NATS_URL", "nats://a:4222"}, {"NATS_CA", ca}},
        "NATS_URL: NATS_CA, NATS_CERT and NATS_KEY need tls:// URLs");
  fails({{"NATS_CONNECT_TIMEOUT", "50ms"}}, "NATS_CONNECT_TIMEOUT: '50ms' is outside 100ms..1m");
  std::remove(ca.c_str());
  std::remove(cert.c_str());
  std::remove(key.c_str());
}

TEST_CASE("the reader lists every variable asked for, with its default", "[config]") {
  ConfigReader r({});
  common::ReadCommonConfig(r, "0.0.0.0:9464");
  common::ReadTopologyConfig(r);
  const auto& v = r.variables();
  auto find = [&](const std::string& name) -> const std::string* {
    for (const auto& [n, d] : v) {
      if (n == name) return &d;
    }
    return nullptr;
  };
  REQUIRE(find("NATS_URL"));
  CHECK(*find("NATS_URL") == "nats://127.0.0.1:4222");
  REQUIRE(find("METRICS_LISTEN"));
  CHECK(*find("METRICS_LISTEN") == "0.0.0.0:9464");
  REQUIRE(find("NATS_CA"));
  CHECK(find("NATS_CA")->empty());
  REQUIRE(find("NATS_CONNECT_TIMEOUT"));
  CHECK(*find("NATS_CONNECT_TIMEOUT") == "1s");
  REQUIRE(find("WEB_EVENTS_MAX_AGE"));
  CHECK(*find("WEB_EVENTS_MAX_AGE") == "3d");
  REQUIRE(find("LOG_LEVEL"));
  CHECK(*find("LOG_LEVEL") == "info");
  // Each name once.
  for (size_t i = 0; i < v.size(); ++i) {
    for (size_t j = i + 1; j < v.size(); ++j) CHECK(v[i].first != v[j].first);
  }
}
