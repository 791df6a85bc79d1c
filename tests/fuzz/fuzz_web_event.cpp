// A WEB_EVENTS message under libFuzzer (replayer/event.h): the input's first line is the
// Nats-Msg-Id, the rest the body. Parse() either refuses it with a reason or gives an event whose
// send and batch bodies are JSON and whose keys are KV-safe; the reason becomes a dead letter's
// header, so it must be header-safe too.
#include <simdjson.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "replayer/event.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

bool KvSafeShape(std::string_view key) {
  if (key.empty() || key.front() == '.' || key.back() == '.') return false;
  char prev = 0;
  for (char c : key) {
    const bool token = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '_' || c == '-';
    if (!token && c != '.') return false;
    if (c == '.' && prev == '.') return false;
    prev = c;
  }
  return true;
}

bool IsJson(const std::string& text) {
  static simdjson::dom::parser parser;
  simdjson::dom::element doc;
  return parser.parse(text).get(doc) == simdjson::SUCCESS;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  const size_t nl = in.find('\n');
  const std::string_view msg_id =
      nl == std::string_view::npos ? std::string_view{} : in.substr(0, nl);
  const std::string_view body = nl == std::string_view::npos ? in : in.substr(nl + 1);
  replayer::ParseResult r = replayer::Parse(body, msg_id);
  if (!r.event) {
    fuzz::Check(!r.poison_reason.empty());
    fuzz::Check(fuzz::HeaderSafe(r.poison_reason));
    return 0;
  }
  const replayer::WebEvent& e = *r.event;
  fuzz::Check(!e.id.empty() && !e.website.empty() && !e.visitor.empty());
  fuzz::Check(KvSafeShape(replayer::KvSafe(e.id)));
  fuzz::Check(KvSafeShape(replayer::KvSafe(e.visitor)));
  fuzz::Check(IsJson(replayer::BuildSendBody(e)));
  fuzz::Check(IsJson(replayer::BuildBatchBody({&e, &e})));
  return 0;
}
