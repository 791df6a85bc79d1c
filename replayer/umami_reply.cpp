#include "replayer/umami_reply.h"

#include <simdjson.h>

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

bool ProbePassed(int status, std::string_view body) {
  if (status != 400 && status != 403) return false;
  return body.find("Website not found") != std::string_view::npos;
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
  for (char& c : out) {
    if (c == '\r' || c == '\n' || c == '\t') c = ' ';
  }
  return out;
}

}  // namespace replayer
