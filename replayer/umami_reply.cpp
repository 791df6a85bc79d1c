#include "replayer/umami_reply.h"

#include <simdjson.h>

namespace replayer {

SendReply ParseSendReply(std::string_view body) {
  SendReply r;
  size_t b = body.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return r;  // stored, no token
  body = body.substr(b);
  size_t e = body.find_last_not_of(" \t\r\n");
  body = body.substr(0, e + 1);
  if (body.front() != '{') {
    r.cache_token = std::string(body);
    return r;
  }
  thread_local simdjson::dom::parser parser;  // reused: a new parser allocates its buffers
  simdjson::dom::object obj;
  if (parser.parse(body.data(), body.size()).get_object().get(obj) != simdjson::SUCCESS) {
    return r;  // a 2xx we cannot read: Umami took it; keep no token
  }
  std::string_view cache;
  if (obj["cache"].get_string().get(cache) == simdjson::SUCCESS) {
    r.cache_token = std::string(cache);
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
