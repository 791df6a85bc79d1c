// common::Message's header accessors on a message built locally (no server): the byte count the
// replayer's in-flight budget uses must agree with the headers a DLQ copy carries.
#include <nats/nats.h>

#include <catch2/catch.hpp>
#include <string>

#include "common/nats_stream.h"

namespace {

common::Message Make(const std::vector<std::pair<std::string, std::string>>& headers) {
  // nats.c's globals (its message garbage collector's lock) exist once the library is open; a
  // connection opens it, and nothing here makes one.
  REQUIRE(nats_Open(-1) == NATS_OK);
  natsMsg* raw = nullptr;
  REQUIRE(natsMsg_Create(&raw, "web.events.site", nullptr, "{}", 2) == NATS_OK);
  for (const auto& [k, v] : headers)
    REQUIRE(natsMsgHeader_Add(raw, k.c_str(), v.c_str()) == NATS_OK);
  return common::Message(raw);
}

}  // namespace

TEST_CASE("message headers: bytes, views and copies agree", "[unit]") {
  auto m =
      Make({{"Nats-Msg-Id", "abc-123"}, {"Sa-Dlq-Replay", "1"}, {"X-Two", "a"}, {"X-Two", "bb"}});
  size_t expected = 0;
  for (const auto& [k, v] : m.AllHeaders()) expected += k.size() + v.size() + 4;
  CHECK(m.AllHeaders().size() == 4);
  CHECK(m.HeaderBytes() == expected);
  CHECK(expected == (11 + 7 + 4) + (13 + 1 + 4) + (5 + 1 + 4) + (5 + 2 + 4));
  CHECK(m.HeaderView("Nats-Msg-Id") == std::optional<std::string_view>("abc-123"));
  CHECK(m.Header("Nats-Msg-Id") == std::optional<std::string>("abc-123"));
  CHECK_FALSE(m.HeaderView("Absent").has_value());
  CHECK_FALSE(m.Header("Absent").has_value());
}

TEST_CASE("message headers: none", "[unit]") {
  auto m = Make({});
  CHECK(m.HeaderBytes() == 0);
  CHECK(m.AllHeaders().empty());
  CHECK_FALSE(m.HeaderView("Nats-Msg-Id").has_value());
}
