#include "common/log.h"

#include <catch2/catch.hpp>

using namespace std::chrono;

TEST_CASE("a repeated event is logged the first times, then once per period", "[log]") {
  common::LogLimiter limit(3, seconds(60));
  steady_clock::time_point t{};
  int64_t suppressed = -1;
  for (int i = 0; i < 3; ++i) {
    CHECK(limit.Allow(t + milliseconds(500 * i), &suppressed));
    CHECK(suppressed == 0);
  }
  // Every 500 ms for a minute: none logged until the minute since the last line is over.
  int logged = 0;
  for (int i = 3; i < 124; ++i) {
    if (limit.Allow(t + milliseconds(500 * i), &suppressed)) {
      ++logged;
      CHECK(milliseconds(500 * i) >= milliseconds(1000) + seconds(60));
      CHECK(suppressed == 119);  // occurrences 4..122 were left out
    }
  }
  CHECK(logged == 1);
  limit.Reset();
  CHECK(limit.Allow(t + seconds(70), &suppressed));
  CHECK(suppressed == 0);
}

TEST_CASE("a limited line says how many were left out, and nothing when none were", "[log]") {
  CHECK(common::LeftOut(0).empty());
  CHECK(common::LeftOut(-1).empty());
  CHECK(common::LeftOut(382) == " (382 more like it not logged)");
}

TEST_CASE("a message's value is escaped for a text log line", "[log]") {
  using common::log::Escaped;
  CHECK(Escaped("api.metrics.tenant-1") == "api.metrics.tenant-1");
  CHECK(Escaped("a\x1b[31mred\x1b[0m") == "a\\x1b[31mred\\x1b[0m");
  CHECK(Escaped("line\r\nforged 2026-01-01 info") == "line\\x0d\\x0aforged 2026-01-01 info");
  CHECK(Escaped(std::string("nul\0tab\tdel\x7f", 12)) == "nul\\x00tab\\x09del\\x7f");
  CHECK(Escaped("caf\xc3\xa9") == "caf\\xc3\\xa9");
  // A doubled backslash keeps "\x1b" written by a sender apart from an escaped ESC.
  CHECK(Escaped("\\x1b") == "\\\\x1b");
  CHECK(Escaped("") == "");
}

TEST_CASE("an escaped value is cut at its bound and says how long it was", "[log]") {
  using common::log::Escaped;
  CHECK(Escaped(std::string(10, 'x'), 10) == std::string(10, 'x'));
  CHECK(Escaped(std::string(11, 'x'), 10) == std::string(10, 'x') + "...(11 bytes)");
  CHECK(Escaped(std::string(1000, '\x1b'), 3) == "\\x1b\\x1b\\x1b...(1000 bytes)");
  CHECK(Escaped(std::string(500, 'y')).size() == 200 + std::string("...(500 bytes)").size());
}

TEST_CASE("JSON escaping keeps valid UTF-8 and replaces invalid bytes", "[log]") {
  CHECK(common::JsonEscape("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80") ==
        "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
  CHECK(common::JsonEscape("a\xff"
                           "b") == "a\\ufffdb");
  CHECK(common::JsonEscape("\xc3") == "\\ufffd");                        // cut short
  CHECK(common::JsonEscape("\xc0\xaf") == "\\ufffd\\ufffd");             // overlong
  CHECK(common::JsonEscape("\xed\xa0\x80") == "\\ufffd\\ufffd\\ufffd");  // surrogate
  CHECK(common::JsonEscape("q\"\\\x1b") == "q\\\"\\\\\\u001b");
  // An escaped value inside a JSON line: the backslashes doubled once more, still valid.
  CHECK(common::JsonEscape(common::log::Escaped("\x1b[31m")) == "\\\\x1b[31m");
}
