#include "replayer/event.h"

#include <simdjson.h>

#include <charconv>

#include "replayer/event_rules.h"

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

// Appends s as the inside of a JSON string literal. Most texts need no escape: copied whole.
void AppendEscaped(std::string& out, std::string_view s) {
  size_t run = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(s.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default: {
        static const char* kHex = "0123456789abcdef";
        out += "\\u00";
        out += kHex[c >> 4];
        out += kHex[c & 15];
      }
    }
  }
  out.append(s.data() + run, s.size() - run);
}

// Appends a JSON value, minified. Numbers are written as the parser read them (the shortest
// text of the double, or the integer).
void AppendJson(std::string& out, simdjson::dom::element v) {
  char buf[32];
  switch (v.type()) {
    case simdjson::dom::element_type::OBJECT: {
      out += '{';
      bool first = true;
      for (auto m : simdjson::dom::object(v)) {
        if (!first) out += ',';
        first = false;
        out += '"';
        AppendEscaped(out, m.key);
        out += "\":";
        AppendJson(out, m.value);
      }
      out += '}';
      break;
    }
    case simdjson::dom::element_type::ARRAY: {
      out += '[';
      bool first = true;
      for (auto e : simdjson::dom::array(v)) {
        if (!first) out += ',';
        first = false;
        AppendJson(out, e);
      }
      out += ']';
      break;
    }
    case simdjson::dom::element_type::STRING:
      out += '"';
      AppendEscaped(out, v.get_string().value_unsafe());
      out += '"';
      break;
    case simdjson::dom::element_type::INT64: {
      auto r = std::to_chars(buf, buf + sizeof buf, int64_t(v));
      out.append(buf, r.ptr);
      break;
    }
    case simdjson::dom::element_type::UINT64: {
      auto r = std::to_chars(buf, buf + sizeof buf, uint64_t(v));
      out.append(buf, r.ptr);
      break;
    }
    case simdjson::dom::element_type::DOUBLE: {
      auto r = std::to_chars(buf, buf + sizeof buf, double(v));
      out.append(buf, r.ptr);
      break;
    }
    case simdjson::dom::element_type::BOOL:
      out += bool(v) ? "true" : "false";
      break;
    case simdjson::dom::element_type::NULL_VALUE:
      out += "null";
      break;
  }
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

int64_t ParsedBytes(const ParseResult& r) {
  size_t n = r.poison_reason.size();
  if (r.event) {
    const WebEvent& e = *r.event;
    n += e.id.size() + e.website.size() + e.visitor.size() + e.ip.size() + e.user_agent.size() +
         e.type.size() + e.payload_members.size();
  }
  return static_cast<int64_t>(n);
}

ParseResult Parse(std::string_view body, std::string_view msg_id) {
  thread_local simdjson::dom::parser parser;  // reused: a new parser allocates its buffers
  simdjson::dom::element doc;
  if (auto err = parser.parse(body.data(), body.size()).get(doc); err) {
    if (err == simdjson::NUMBER_ERROR) {
      // Valid JSON too, but this parser reads no integer literal beyond 64 bits; as event data
      // such a number is beyond what Umami stores as well.
      return Poison(
          "the event holds a number this parser cannot read (an integer beyond 64 "
          "bits, or a malformed number)");
    }
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
    // Quoted through Excerpt: the type is the edge's (found by tests/fuzz: a tab went raw into
    // the dead letter's reason and the log).
    return Poison("the event type '" + rules::Excerpt(*type, 32) + "' is not event or identify");
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
    // Range first: converting a double beyond int64 is undefined behaviour.
    if (!(daccepted > 0 && daccepted < 9.0e18)) {
      return Poison("the event's accepted_at is out of range");
    }
    e.accepted_at_ms = static_cast<int64_t>(daccepted);
  } else {
    return Poison("the event has no numeric accepted_at");
  }
  if (e.accepted_at_ms <= 0) return Poison("the event's accepted_at is not a positive time");

  e.ip = StringField(obj, "ip").value_or("");
  e.user_agent = StringField(obj, "user_agent").value_or("");
  // Both go out as request headers (Umami 2.10 reads the client from them).
  if (auto why = rules::CheckHeaderValue("ip", e.ip, rules::kMaxIpBytes); !why.empty()) {
    return Poison(why);
  }
  if (auto why = rules::CheckHeaderValue("user_agent", e.user_agent, rules::kMaxUserAgentBytes);
      !why.empty()) {
    return Poison(why);
  }

  simdjson::dom::object payload;
  if (obj["payload"].get_object().get(payload) != simdjson::SUCCESS) {
    return Poison("the event has no payload object");
  }
  // Copy the edge's payload members except the ones the send owns, checking what Umami would
  // store only in part (event_rules.h).
  for (auto member : payload) {
    std::string_view k = member.key;
    if (k == "website" || k == "timestamp" || k == "ip" || k == "userAgent") continue;
    std::string_view text;
    bool is_text = member.value.get_string().get(text) == simdjson::SUCCESS;
    if (is_text && text.find('\0') != std::string_view::npos) {
      return Poison("the event's payload field '" + rules::Excerpt(k) +
                    "' holds a NUL character, which PostgreSQL cannot store");
    }
    simdjson::dom::object data;
    if (k == "data" && member.value.get_object().get(data) == simdjson::SUCCESS) {
      if (auto why = rules::CheckData(data); !why.empty()) return Poison(why);
    }
    if (!e.payload_members.empty()) e.payload_members += ',';
    e.payload_members += '"';
    AppendEscaped(e.payload_members, k);
    e.payload_members += "\":";
    if (k == "title" && is_text && rules::CountChars(text) > rules::kMaxTitleChars) {
      // Umami 3.x cuts a title to its column's 500 characters; 2.10 fails the event row (after
      // writing its data rows). Cut it here, as 3.x would, so both store the event.
      e.payload_members += '"';
      AppendEscaped(e.payload_members, rules::CutChars(text, rules::kMaxTitleChars));
      e.payload_members += '"';
      continue;
    }
    AppendJson(e.payload_members, member.value);
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
  AppendEscaped(out, e.type);
  out += "\",\"payload\":{";
  out += e.payload_members;
  if (!e.payload_members.empty()) out += ',';
  out += "\"website\":\"";
  AppendEscaped(out, e.website);
  out += "\",\"timestamp\":";
  out += std::to_string(e.accepted_at_ms / 1000);
  // Umami 2.10 answers 400 to a payload ip that is not a dotted IPv4 address; 3.x reads the
  // payload's ip first, else X-Forwarded-For, which carries every address.
  if (rules::StrictIpv4(e.ip)) {
    out += ",\"ip\":\"";
    AppendEscaped(out, e.ip);
    out += '"';
  }
  if (!e.user_agent.empty()) {
    out += ",\"userAgent\":\"";
    AppendEscaped(out, e.user_agent);
    out += '"';
  }
  out += "}}";
  return out;
}

std::string BuildBatchBody(const std::vector<const WebEvent*>& events) {
  std::string out = "[";
  for (const WebEvent* e : events) {
    if (out.size() > 1) out += ',';
    out += BuildSendBody(*e);
  }
  out += ']';
  return out;
}

}  // namespace replayer
