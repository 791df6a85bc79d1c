#include "replayer/event.h"

#include <simdjson.h>
#include <catch2/catch.hpp>

using namespace replayer;

namespace {
const char* kGood =
    R"({"id":"e-1","website":"11111111-2222-4333-8444-555555555555","visitor":"v1",)"
    R"("accepted_at":1764427800123,"ip":"203.0.113.7","user_agent":"Mozilla/5.0",)"
    R"("type":"event","payload":{"hostname":"example.com","url":"/","name":"signup",)"
    R"("data":{"plan":"pro"},"website":"spoofed","timestamp":1}})";
}

TEST_CASE("a good event parses", "[event]") {
  auto r = Parse(kGood, "");
  REQUIRE(r.event);
  CHECK(r.event->id == "e-1");
  CHECK(r.event->website == "11111111-2222-4333-8444-555555555555");
  CHECK(r.event->visitor == "v1");
  CHECK(r.event->accepted_at_ms == 1764427800123);
  CHECK(r.event->ip == "203.0.113.7");
  CHECK(r.event->type == "event");
}

TEST_CASE("a parsed event costs about its payload again, never more than its body", "[event]") {
  // The byte budget charges a held message as received plus ParsedBytes, and a fetch asks for
  // half the room: that holds only if the parse is no bigger than the body.
  std::string data = "{";  // 92 members of 490 characters: about 46 KB
  for (int k = 0; k < 92; ++k) {
    data += (k == 0 ? "\"k" : ",\"k") + std::to_string(k) + "\":\"" + std::string(490, 'x') + "\"";
  }
  data += "}";
  std::string big = kGood;
  big.replace(big.find(R"({"plan":"pro"})"), 14, data);
  for (const std::string& body : {std::string(kGood), big}) {
    auto r = Parse(body, "");
    REQUIRE(r.event);
    CHECK(ParsedBytes(r) <= static_cast<int64_t>(body.size()));
    CHECK(ParsedBytes(r) >= static_cast<int64_t>(r.event->payload_members.size()));
  }
  CHECK(ParsedBytes(Parse(big, "")) > 46'000);
  auto poison = Parse("not json", "m-1");
  REQUIRE_FALSE(poison.event);
  CHECK(ParsedBytes(poison) == static_cast<int64_t>(poison.poison_reason.size()));
}

TEST_CASE("the send body carries our fields, not the edge's copies", "[event]") {
  auto r = Parse(kGood, "");
  REQUIRE(r.event);
  std::string body = BuildSendBody(*r.event);
  simdjson::dom::parser p;
  auto doc = p.parse(body);
  REQUIRE(doc.error() == simdjson::SUCCESS);
  CHECK(std::string_view(doc["type"]) == "event");
  auto payload = doc["payload"];
  CHECK(std::string_view(payload["website"]) == "11111111-2222-4333-8444-555555555555");
  CHECK(int64_t(payload["timestamp"]) == 1764427800);
  CHECK(std::string_view(payload["ip"]) == "203.0.113.7");
  CHECK(std::string_view(payload["userAgent"]) == "Mozilla/5.0");
  CHECK(std::string_view(payload["url"]) == "/");
  CHECK(std::string_view(payload["data"]["plan"]) == "pro");
  // One website key only: the edge's "spoofed" copy is gone.
  CHECK(body.find("spoofed") == std::string::npos);
}

TEST_CASE("poison at once names the fault", "[event]") {
  auto reason = [](std::string_view body, std::string_view id = "") {
    auto r = Parse(body, id);
    CHECK_FALSE(r.event);
    return r.poison_reason;
  };
  CHECK_THAT(reason("not json"), Catch::StartsWith("the event is not valid JSON"));
  CHECK_THAT(reason(R"({"id":"x")"), Catch::StartsWith("the event is not valid JSON"));
  CHECK(reason("[1,2]") == "the event is not a JSON object");
  CHECK(reason(R"({"id":"x","visitor":"v","type":"event","accepted_at":1,"payload":{}})") ==
        "the event has no website id");
  CHECK(
      reason(
          R"({"id":"x","website":"  ","visitor":"v","type":"event","accepted_at":1,"payload":{}})") ==
      "the event has no website id");
  CHECK(reason(R"({"id":"x","website":"w","type":"event","accepted_at":1,"payload":{}})") ==
        "the event has no usable visitor key");
  CHECK(
      reason(
          R"({"id":"x","website":"w","visitor":"","type":"event","accepted_at":1,"payload":{}})") ==
      "the event has no usable visitor key");
  CHECK(
      reason(
          R"({"id":"x","website":"w","visitor":42,"type":"event","accepted_at":1,"payload":{}})") ==
      "the event has no usable visitor key");
  CHECK(reason(R"({"website":"w","visitor":"v","type":"event","accepted_at":1,"payload":{}})") ==
        "the event has no event id (neither in the body nor Nats-Msg-Id)");
  CHECK(
      reason(
          R"({"id":"x","website":"w","visitor":"v","type":"pageview","accepted_at":1,"payload":{}})") ==
      "the event type 'pageview' is not event or identify");
  // The edge's value is quoted escaped (tests/fuzz found a tab going raw into the reason).
  CHECK(
      reason(
          R"({"id":"x","website":"w","visitor":"v","type":"even\t\u001b[2J","accepted_at":1,"payload":{}})") ==
      "the event type 'even\\x09\\x1b[2J' is not event or identify");
  CHECK(reason(R"({"id":"x","website":"w","visitor":"v","accepted_at":1,"payload":{}})") ==
        "the event has no type");
  CHECK(reason(R"({"id":"x","website":"w","visitor":"v","type":"event","payload":{}})") ==
        "the event has no numeric accepted_at");
  CHECK(
      reason(
          R"({"id":"x","website":"w","visitor":"v","type":"event","accepted_at":"1","payload":{}})") ==
      "the event has no numeric accepted_at");
  CHECK(
      reason(
          R"({"id":"x","website":"w","visitor":"v","type":"event","accepted_at":-5,"payload":{}})") ==
      "the event's accepted_at is not a positive time");
  CHECK(reason(R"({"id":"x","website":"w","visitor":"v","type":"event","accepted_at":1})") ==
        "the event has no payload object");
  CHECK(reason(R"({"id":"x","website":"w","visitor":")" + std::string(300, 'a') +
               R"(","type":"event","accepted_at":1,"payload":{}})") ==
        "the event's visitor key is longer than 256 bytes");
}

TEST_CASE("the message id stands in for a missing body id", "[event]") {
  auto r = Parse(R"({"website":"w","visitor":"v","type":"identify","accepted_at":5,"payload":{}})",
                 "msg-7");
  REQUIRE(r.event);
  CHECK(r.event->id == "msg-7");
  CHECK(r.event->type == "identify");
}

TEST_CASE("truncated input at every length is poison, never a crash", "[event]") {
  std::string good = kGood;
  for (size_t n = 0; n < good.size(); ++n) {
    auto r = Parse(std::string_view(good.data(), n), "");
    CHECK_FALSE(r.event);
  }
  CHECK(Parse(good, "").event);
}

TEST_CASE("KV-safe keys keep simple ids and hex-encode the rest", "[event]") {
  CHECK(KvSafe("abc-DEF_09") == "abc-DEF_09");
  CHECK(KvSafe("a.b") == "x612e62");
  CHECK(KvSafe("") == "x");
  CHECK(KvSafe("v 1") != KvSafe("v_1"));
}
