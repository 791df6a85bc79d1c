#include "replayer/umami_reply.h"

#include <simdjson.h>

#include <algorithm>

namespace replayer {

bool UsableToken(std::string_view t) {
  if (t.empty() || t.size() > kMaxTokenBytes) return false;
  int dots = 0;
  size_t segment = 0;
  for (char c : t) {
    if (c == '.') {
      if (dots < 2 && segment == 0) return false;
      ++dots;
      segment = 0;
      continue;
    }
    bool b64url = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                  c == '-' || c == '_';
    if (!b64url) return false;
    ++segment;
  }
  return dots == 2;
}

SendReply ParseSendReply(std::string_view body) {
  SendReply r;
  size_t b = body.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return r;  // stored, no token
  body = body.substr(b);
  size_t e = body.find_last_not_of(" \t\r\n");
  body = body.substr(0, e + 1);
  auto take = [&r](std::string_view token, const char* where) {
    if (UsableToken(token)) {
      r.cache_token = std::string(token);
    } else {
      r.token_problem = std::string(where) + " of " + std::to_string(token.size()) +
                        " bytes that is not a JWT-shaped token";
    }
  };
  if (body.front() != '{') {
    take(body, "a text reply");
    return r;
  }
  thread_local simdjson::dom::parser parser;  // reused: a new parser allocates its buffers
  simdjson::dom::object obj;
  if (parser.parse(body.data(), body.size()).get_object().get(obj) != simdjson::SUCCESS) {
    r.token_problem = "a reply of " + std::to_string(body.size()) + " bytes that is not JSON";
    return r;  // a 2xx we cannot read: Umami took it; keep no token
  }
  std::string_view cache;
  if (obj["cache"].get_string().get(cache) == simdjson::SUCCESS) {
    take(cache, "a cache field");
    return r;
  }
  // {} or {"beep":"boop"}: Umami recognised a bot and stored nothing.
  if (obj.size() == 0 || obj["beep"].error() == simdjson::SUCCESS) {
    r.kind = SendReply::Kind::kDroppedBot;
  }
  return r;
}

BatchReply ParseBatchReply(std::string_view body, size_t sent) {
  BatchReply r;
  thread_local simdjson::dom::parser parser;
  simdjson::dom::object obj;
  if (parser.parse(body.data(), body.size()).get_object().get(obj) != simdjson::SUCCESS) {
    r.problem =
        "a batch reply of " + std::to_string(body.size()) + " bytes that is not a JSON object";
    return r;
  }
  uint64_t size = 0;
  simdjson::dom::array details;
  if (obj["size"].get_uint64().get(size) != simdjson::SUCCESS ||
      obj["details"].get_array().get(details) != simdjson::SUCCESS) {
    r.problem = "a batch reply without size and details";
    return r;
  }
  if (size != sent) {
    r.problem = "a batch reply for " + std::to_string(size) + " elements, " + std::to_string(sent) +
                " sent";
    return r;
  }
  std::vector<bool> seen(sent, false);
  for (simdjson::dom::element d : details) {
    uint64_t index = 0;
    if (d["index"].get_uint64().get(index) != simdjson::SUCCESS || index >= sent || seen[index]) {
      r.problem = "a batch reply whose details name no element sent, or one twice";
      r.failed.clear();
      return r;
    }
    seen[index] = true;
    BatchReply::Failed f;
    f.index = index;
    simdjson::dom::element response;
    std::string text;
    if (d["response"].get(response) == simdjson::SUCCESS) {
      int64_t status = 0;
      if (response["error"]["status"].get_int64().get(status) == simdjson::SUCCESS &&
          status >= 100 && status <= 599) {
        f.status = static_cast<int>(status);
      }
      text = simdjson::minify(response);
    }
    f.excerpt = AnswerExcerpt(f.status, text, "");
    f.excerpt.insert(f.excerpt.find(':'), " in a batch");
    r.failed.push_back(std::move(f));
  }
  uint64_t errors = 0;
  if (obj["errors"].get_uint64().get(errors) == simdjson::SUCCESS && errors != r.failed.size()) {
    r.problem = "a batch reply whose error count differs from its details";
    r.failed.clear();
    return r;
  }
  std::sort(r.failed.begin(), r.failed.end(),
            [](const auto& a, const auto& b) { return a.index < b.index; });
  r.readable = true;
  std::string_view cache;
  auto c = obj["cache"];
  if (c.get_string().get(cache) == simdjson::SUCCESS) {
    r.stored_any = true;
    if (UsableToken(cache)) {
      r.cache_token = std::string(cache);
    } else {
      r.token_problem = "a batch's cache field of " + std::to_string(cache.size()) +
                        " bytes that is not a JWT-shaped token";
    }
  } else if (c.error() == simdjson::SUCCESS && !c.is_null()) {
    r.stored_any = true;  // something in the token's place: Umami stored an element
    r.token_problem = "a batch's cache field that is not a string";
  }
  return r;
}

bool ProbePassed(int status, std::string_view body) {
  if (status != 400 && status != 403) return false;
  return body.find("Website not found") != std::string_view::npos;
}

namespace {

bool Contains(std::string_view body, std::string_view what) {
  return body.find(what) != std::string_view::npos;
}

// Words of a database's or a driver's error: an answer holding one is never "about the event",
// whatever its status (2.10 answers some database errors with 400).
bool MentionsDatabase(std::string_view body) {
  static constexpr std::string_view kWords[] = {
      "database", "Database", "INSERT",  "transaction", "read-only", "connect", "Connect",
      "prisma",   "Prisma",   "ECONN",   "timeout",     "Timeout",   "P10",     "P20",
      "relation", "column",   "numeric", "constraint",  "violates",  "deadlock"};
  for (auto w : kWords) {
    if (Contains(body, w)) return true;
  }
  return false;
}

// Umami's validators' wording: yup's (2.10) "<path> must be …", "… is a required field", and
// zod's (v3) "Too big", "Too small", "Invalid …", "expected …".
bool ValidationWording(std::string_view body) {
  static constexpr std::string_view kWords[] = {" must be ", "is a required field", "must match",
                                                "Too big",   "Too small",           "Invalid",
                                                "expected "};
  for (auto w : kWords) {
    if (Contains(body, w)) return true;
  }
  return false;
}

}  // namespace

AnswerAbout ClassifyAnswer(int status, std::string_view body) {
  if ((status == 400 || status == 403 || status == 404) && Contains(body, "Website not found")) {
    return AnswerAbout::kSite;
  }
  if ((status == 400 || status == 413 || status == 422) && !MentionsDatabase(body) &&
      ValidationWording(body)) {
    return AnswerAbout::kEvent;
  }
  return AnswerAbout::kOther;
}

bool HeartbeatPassed(int status) { return status == 200; }

std::string ProbeBody() {
  return std::string(R"({"type":"event","payload":{"website":")") + kProbeWebsite +
         R"(","hostname":"probe.invalid","url":"/","language":"en-US","screen":"1x1",)"
         R"("title":"replayer health probe"}})";
}

std::string AnswerExcerpt(int status, std::string_view body, std::string_view error) {
  std::string out;
  if (status == 0) {
    out = "no answer: " + std::string(error);
  } else {
    out = "HTTP " + std::to_string(status) + ": " + std::string(body.substr(0, 200));
  }
  // One line of text whatever Umami (or a proxy before it) sent: it is logged and becomes a
  // dead letter's header.
  for (char& c : out) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) c = ' ';
  }
  return out;
}

}  // namespace replayer
