// server_version: nats-server version numbers, the supported range, INFO lines and URLs.
#include <catch2/catch.hpp>
#include <string>

#include "common/server_version.h"

namespace sv = common::server_version;

TEST_CASE("versions as nats-server writes them are read", "[unit][server_version]") {
  auto a = sv::Parse("v2.10.27");
  REQUIRE(a);
  CHECK(a->major == 2);
  CHECK(a->minor == 10);
  CHECK(a->patch == 27);
  CHECK_FALSE(a->prerelease);
  CHECK(a->text == "2.10.27");
  auto b = sv::Parse("2.15.1");
  REQUIRE(b);
  CHECK(b->minor == 15);
  CHECK(b->text == "2.15.1");
  auto rc = sv::Parse("2.11.0-RC.1");
  REQUIRE(rc);
  CHECK(rc->prerelease);
  CHECK(rc->text == "2.11.0-RC.1");
  auto build = sv::Parse("2.12.3+abc.1");
  REQUIRE(build);
  CHECK_FALSE(build->prerelease);
}

TEST_CASE("garbage is no version", "[unit][server_version]") {
  for (const char* bad : {"",
                          "v",
                          "2",
                          "2.10",
                          "2.10.",
                          "2.10.x",
                          ".2.10.27",
                          "2..27",
                          "2.10.27-",
                          "2.10.27+",
                          "2.10.27 ",
                          " 2.10.27",
                          "2.10.27-RC 1",
                          "2.10.27-\x1b[31m",
                          "1234567.1.1",
                          "-2.10.27",
                          "2.10.27\n",
                          "2.10.27-RC.1+",
                          "latest",
                          "2.10.27.1"}) {
    INFO(bad);
    CHECK_FALSE(sv::Parse(bad));
  }
  CHECK_FALSE(sv::Parse(std::string(1000, '9')));
}

TEST_CASE("the supported range starts at 2.10.27", "[unit][server_version]") {
  auto supported = [](const char* text) { return sv::Supported(*sv::Parse(text)); };
  CHECK(supported("2.10.27"));
  CHECK(supported("v2.10.29"));
  CHECK(supported("2.11.0-RC.1"));  // a pre-release of 2.11 is past every 2.10.x
  CHECK(supported("2.15.1"));
  CHECK(supported("3.0.0"));
  CHECK_FALSE(supported("2.10.27-RC.2"));  // before 2.10.27 itself
  CHECK_FALSE(supported("2.10.26"));
  CHECK_FALSE(supported("2.9.10"));
  CHECK_FALSE(supported("2.9.99"));
  CHECK_FALSE(supported("1.99.99"));
  CHECK(sv::Less(*sv::Parse("2.9.10"), *sv::Parse("2.10.0")));  // numbers, not text
  CHECK_FALSE(sv::Less(*sv::Parse("2.10.27"), *sv::Parse("2.10.27")));
}

TEST_CASE("the refusal names the version found, the minimum and where the range is stated",
          "[unit][server_version]") {
  const std::string m = sv::Refusal(*sv::Parse("2.9.10"), "nats://10.0.0.1:4222");
  CHECK_THAT(m, Catch::Contains("nats-server 2.9.10 at nats://10.0.0.1:4222"));
  CHECK_THAT(m, Catch::Contains("older than 2.10.27"));
  CHECK_THAT(m, Catch::Contains("docs/contract.md"));
}

TEST_CASE("an INFO line gives the version", "[unit][server_version]") {
  auto v = sv::FromInfoLine(
      R"(INFO {"server_id":"NA","server_name":"n1","version":"2.15.1","proto":1,"go":"go1.25","host":"0.0.0.0","port":4222,"headers":true,"max_payload":1048576})"
      "\r\n");
  REQUIRE(v);
  CHECK(*v == "2.15.1");
  CHECK_FALSE(sv::FromInfoLine("PING\r\n"));
  CHECK_FALSE(sv::FromInfoLine("INFO "));
  CHECK_FALSE(sv::FromInfoLine("INFO {\"version\":2}"));
  CHECK_FALSE(sv::FromInfoLine("INFO {\"version\":\"2.10.27\""));  // cut short
  CHECK_FALSE(sv::FromInfoLine("INFO []"));
  CHECK_FALSE(sv::FromInfoLine("-ERR 'Authorization Violation'"));
}

TEST_CASE("a server URL gives its host and port", "[unit][server_version]") {
  auto a = sv::EndpointOf("nats://127.0.0.1:4222");
  REQUIRE(a);
  CHECK(a->host == "127.0.0.1");
  CHECK(a->port == "4222");
  auto b = sv::EndpointOf("tls://user:p@ss:w@nats-1.example:4443");
  REQUIRE(b);
  CHECK(b->host == "nats-1.example");
  CHECK(b->port == "4443");
  auto c = sv::EndpointOf("nats://[::1]:4222");
  REQUIRE(c);
  CHECK(c->host == "::1");
  CHECK(c->port == "4222");
  for (const char* bad :
       {"", "nats://", "nats://host", "nats://host:", "nats://host:0", "nats://host:65536",
        "nats://:4222", "nats://[::1]", "nats://[::1:4222", "nats://host:42x2"}) {
    INFO(bad);
    CHECK_FALSE(sv::EndpointOf(bad));
  }
}
