// Web events (docs/contract.md §3.1): parsing a WEB_EVENTS message and building Umami's /api/send
// request.
//
// Pure: no I/O. Parse() decides poison-at-once (not JSON, no website id, no usable visitor key,
// unknown type, no usable event id); everything else is left for Umami to judge. Safe from any
// thread (each call has its own simdjson parser).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace replayer {

struct WebEvent {
  std::string id;       // event id (body "id", else the Nats-Msg-Id)
  std::string website;  // site uuid
  std::string visitor;  // opaque visitor key
  int64_t accepted_at_ms = 0;
  std::string ip;
  std::string user_agent;
  std::string type;  // "event" or "identify"
  // The edge's "payload" members (minified, comma-separated, no braces) without the ones the
  // send sets itself: prepared by Parse() on the intake thread so the send only concatenates.
  std::string payload_members;

  // Key of the visitor's lane and visit state: site and visitor together.
  std::string LaneKey() const { return website + "\n" + visitor; }
};

struct ParseResult {
  std::optional<WebEvent> event;
  std::string poison_reason;  // set when event is empty: one sentence naming the fault
};

// msg_id: the message's Nats-Msg-Id header (may be empty), used when the body has no id.
ParseResult Parse(std::string_view body, std::string_view msg_id);

// The bytes a parse result holds (its strings): with the message itself, what a held event
// costs (Delivery::bytes). At most about the body's size: every string is a piece of the body
// (or of the message id), but for a poison reason, a sentence.
int64_t ParsedBytes(const ParseResult& r);

// The body of POST /api/send: {"type":…,"payload":{…payload, website, timestamp, ip, userAgent}}.
// Fields we set replace the same fields in the edge's payload.
std::string BuildSendBody(const WebEvent& e);
// The body of POST /api/batch (Umami 3.x): BuildSendBody()'s bodies as one JSON array, in order.
std::string BuildBatchBody(const std::vector<const WebEvent*>& events);

// A KV-safe key (tokens of [A-Za-z0-9_-], '.'-separated) for an event id or a visitor.
std::string KvSafe(std::string_view s);

}  // namespace replayer
