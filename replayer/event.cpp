#include "replayer/event.h"

#include <simdjson.h>

#include "common/log.h"

namespace replayer {
namespace {

constexpr size_t kMaxIdBytes = 128;
constexpr size_t kMaxVisitorBytes = 256;

bool SimpleToken(std::string_view s) {
  if (s.empty() || s.size() > kMaxIdBytes) return false;
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_';
    if (!ok) return false;
  }
  return true;
}

bool Blank(std::string_view s) {
  for (char c : s) {
    if (c != ' ' && c != '\t' && c != '\r' && c != '\n') return false;
  }
  return true;
}

// A string field; nullopt when absent, null or not a string.
std::optional<std::string> StringField(simdjson::dom::object obj, const char* key) {
  std::string_view v;
  if (obj[key].get_string().get(v) != simdjson::SUCCESS) return std::nullopt;
  return std::string(v);
}

ParseResult Poison(std::string reason) {
  ParseResult r;
  r.poison_reason = std::move(reason);
  return r;
}

}  // namespace

std::string KvSafe(std::string_view s) {
  if (SimpleToken(s)) return std::string(s);
  static const char* kHex = "0123456789abcdef";
  std::string out = "x";
  for (unsigned char c : s) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

ParseResult Parse(std::string_view body, std::string_view msg_id) {
  thread_local simdjson::dom::parser parser;  // reused: a new parser allocates its buffers
  simdjson::dom::element doc;
  if (auto err = parser.parse(body.data(), body.size()).get(doc); err) {
    return Poison(std::string("the event is not valid JSON (") + simdjson::error_message(err) +
                  ")");
  }
  simdjson::dom::object obj;
  if (doc.get_object().get(obj) != simdjson::SUCCESS) {
    return Poison("the event is not a JSON object");
  }
  WebEvent e;
  auto website = StringField(obj, "website");
  if (!website || Blank(*website)) return Poison("the event has no website id");
  if (website->size() > kMaxIdBytes) return Poison("the event's website id is too long");
  e.website = *website;

  auto visitor = StringField(obj, "visitor");
  if (!visitor || Blank(*visitor)) return Poison("the event has no usable visitor key");
  if (visitor->size() > kMaxVisitorBytes) {
    return Poison("the event's visitor key is longer than 256 bytes");
  }
  e.visitor = *visitor;

  auto id = StringField(obj, "id");
  if (!id || Blank(*id)) id = std::string(msg_id);
  if (Blank(*id)) return Poison("the event has no event id (neither in the body nor Nats-Msg-Id)");
  if (id->size() > kMaxIdBytes) return Poison("the event id is longer than 128 bytes");
  e.id = *id;

  auto type = StringField(obj, "type");
  if (!type) return Poison("the event has no type");
  if (*type != "event" && *type != "identify") {
    return Poison("the event type '" + type->substr(0, 32) + "' is not event or identify");
  }
  e.type = *type;

  int64_t accepted = 0;
  uint64_t uaccepted = 0;
  double daccepted = 0;
  auto field = obj["accepted_at"];
  if (field.get_int64().get(accepted) == simdjson::SUCCESS) {
    e.accepted_at_ms = accepted;
  } else if (field.get_uint64().get(uaccepted) == simdjson::SUCCESS) {
    return Poison("the event's accepted_at is out of range");
  } else if (field.get_double().get(daccepted) == simdjson::SUCCESS) {
    e.accepted_at_ms = static_cast<int64_t>(daccepted);
  } else {
    return Poison("the event has no numeric accepted_at");
  }
  if (e.accepted_at_ms <= 0) return Poison("the event's accepted_at is not a positive time");

  e.ip = StringField(obj, "ip").value_or("");
  e.user_agent = StringField(obj, "user_agent").value_or("");

  simdjson::dom::object payload;
  if (obj["payload"].get_object().get(payload) != simdjson::SUCCESS) {
    return Poison("the event has no payload object");
  }
  // Copy the edge's payload members except the ones the send owns.
  for (auto member : payload) {
    std::string_view k = member.key;
    if (k == "website" || k == "timestamp" || k == "ip" || k == "userAgent") continue;
    if (!e.payload_members.empty()) e.payload_members += ',';
    e.payload_members += '"';
    e.payload_members += core::JsonEscape(std::string(k));
    e.payload_members += "\":";
    e.payload_members += simdjson::minify(member.value);
  }
  ParseResult r;
  r.event = std::move(e);
  return r;
}

std::string BuildSendBody(const WebEvent& e) {
  std::string out;
  out.reserve(e.payload_members.size() + e.website.size() + e.ip.size() + e.user_agent.size() +
              128);
  out += "{\"type\":\"";
  out += core::JsonEscape(e.type);
  out += "\",\"payload\":{";
  out += e.payload_members;
  if (!e.payload_members.empty()) out += ',';
  out += "\"website\":\"";
  out += core::JsonEscape(e.website);
  out += "\",\"timestamp\":";
  out += std::to_string(e.accepted_at_ms / 1000);
  if (!e.ip.empty()) {
    out += ",\"ip\":\"";
    out += core::JsonEscape(e.ip);
    out += '"';
  }
  if (!e.user_agent.empty()) {
    out += ",\"userAgent\":\"";
    out += core::JsonEscape(e.user_agent);
    out += '"';
  }
  out += "}}";
  return out;
}

}  // namespace replayer
