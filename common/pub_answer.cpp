#include "common/pub_answer.h"

#include <simdjson.h>

namespace common {

PubAnswer ReadPubAnswer(std::string_view body) {
  PubAnswer a;
  if (body.empty()) {
    a.description = "empty answer";
    return a;
  }
  // One parser per thread: each keeps its buffers, so an answer costs no allocation.
  thread_local simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(body.data(), body.size(), true).get(doc) != simdjson::SUCCESS) {
    a.description = "answer is not JSON";
    return a;
  }
  simdjson::dom::object obj;
  if (doc.get_object().get(obj) != simdjson::SUCCESS) {
    a.description = "answer is not a JSON object";
    return a;
  }
  simdjson::dom::object err;
  if (obj["error"].get_object().get(err) == simdjson::SUCCESS) {
    a.kind = PubAnswer::Kind::kRefused;
    int64_t code = 0;
    if (err["err_code"].get_int64().get(code) == simdjson::SUCCESS && code > 0 && code < 1000000)
      a.err_code = static_cast<int>(code);
    if (err["code"].get_int64().get(code) == simdjson::SUCCESS && code > 0 && code < 1000)
      a.status = static_cast<int>(code);
    std::string_view text;
    if (err["description"].get_string().get(text) == simdjson::SUCCESS) a.description = text;
    if (a.description.empty()) a.description = "refused without a description";
    return a;
  }
  uint64_t seq = 0;
  if (obj["seq"].get_uint64().get(seq) != simdjson::SUCCESS) {
    a.description = "answer has neither seq nor error";
    return a;
  }
  a.kind = PubAnswer::Kind::kStored;
  a.seq = seq;
  bool dup = false;
  if (obj["duplicate"].get_bool().get(dup) == simdjson::SUCCESS) a.duplicate = dup;
  return a;
}

}  // namespace common
