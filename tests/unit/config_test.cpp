#include "common/config.h"

#include <catch2/catch.hpp>

using core::ConfigError;
using core::ConfigReader;
using core::Millis;
using core::ParseDuration;
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
  CHECK(core::FormatDuration(Millis(72LL * 3'600'000)) == "3d");
  CHECK(core::FormatDuration(Millis(90'000)) == "90s");
}

TEST_CASE("defaults apply when nothing is set", "[config]") {
  ConfigReader r({});
  auto c = core::ReadCommonConfig(r, "127.0.0.1:9464");
  auto t = core::ReadTopologyConfig(r);
  REQUIRE_NOTHROW(r.Finish());
  CHECK(c.nats_urls == std::vector<std::string>{"nats://127.0.0.1:4222"});
  CHECK(c.log_level == "info");
  CHECK(c.log_format == "text");
  CHECK(t.replicas == 1);
  CHECK(t.web_events_max_age == std::chrono::hours(72));
  CHECK(t.web_dlq_max_age == std::chrono::hours(24 * 7));
  CHECK(t.api_dlq_max_age == std::chrono::hours(24 * 30));
}

TEST_CASE("every bad variable is named in one start-up error", "[config]") {
  ConfigReader r({{"NATS_URL", "nats://a:4222,http://b:1"},
                  {"LOG_LEVEL", "verbose"},
                  {"LOG_FORMAT", "xml"},
                  {"METRICS_LISTEN", "localhost"},
                  {"STREAM_REPLICAS", "7"},
                  {"WEB_EVENTS_MAX_AGE", "three days"}});
  auto c = core::ReadCommonConfig(r, "127.0.0.1:9464");
  core::ReadTopologyConfig(r);
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
    core::ReadCommonConfig(r, "127.0.0.1:1");
    CHECK_THROWS_WITH(r.Finish(), Catch::Contains("NATS_PASSWORD: is required"));
  }
  {
    ConfigReader r(Env{{"NATS_CREDS", "/nonexistent/x.creds"}});
    core::ReadCommonConfig(r, "127.0.0.1:1");
    CHECK_THROWS_WITH(r.Finish(), Catch::Contains("is not a readable file"));
  }
}

TEST_CASE("NATS inbox prefix: one subject token or nothing", "[config]") {
  {
    ConfigReader r(Env{{"NATS_INBOX_PREFIX", "_INBOX_replayer"}});
    auto c = core::ReadCommonConfig(r, "127.0.0.1:1");
    REQUIRE_NOTHROW(r.Finish());
    CHECK(c.nats_inbox_prefix == "_INBOX_replayer");
  }
  for (const char* bad : {"_INBOX.replayer", "_INBOX_*", "in box", "_INBOX>"}) {
    ConfigReader r(Env{{"NATS_INBOX_PREFIX", bad}});
    core::ReadCommonConfig(r, "127.0.0.1:1");
    CHECK_THROWS_WITH(r.Finish(), Catch::Contains("NATS_INBOX_PREFIX") &&
                                      Catch::Contains("must be one subject token"));
  }
}

TEST_CASE("a stored-ids TTL not longer than the stream max age is refused", "[config]") {
  ConfigReader r(Env{{"STORED_IDS_TTL", "72h"}});
  core::ReadTopologyConfig(r);
  CHECK_THROWS_WITH(r.Finish(), Catch::Contains("STORED_IDS_TTL: must be longer"));
}

TEST_CASE("integers must be whole numbers in range", "[config]") {
  ConfigReader r(Env{{"A", "12x"}, {"B", "99"}, {"C", "5"}});
  CHECK(r.Int("A", 1, 0, 10) == 1);
  CHECK(r.Int("B", 1, 0, 10) == 1);
  CHECK(r.Int("C", 1, 0, 10) == 5);
  CHECK(r.errors().size() == 2);
}
