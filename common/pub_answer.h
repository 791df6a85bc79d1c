// The answer JetStream sends to a publish (a "pub ack"), read without I/O.
//
// A stream that stored the message answers {"stream":"S","seq":N} (with "duplicate":true when
// its duplicate window already held the message id); one that refused it answers
// {"error":{"code":C,"err_code":E,"description":"..."}}. AsyncPublisher (nats_async.h) reads each
// answer with ReadPubAnswer(). Pure: safe from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace common {

struct PubAnswer {
  enum class Kind {
    kStored,      // "seq" present, no "error"
    kRefused,     // the stream's "error": err_code and description say why
    kUnreadable,  // neither: not JSON, truncated, or another shape (description says which)
  };
  Kind kind = Kind::kUnreadable;
  uint64_t seq = 0;
  bool duplicate = false;
  int status = 0;           // the error's HTTP-like "code" (400, 429, 503, ...)
  int err_code = 0;         // JetStream's err_code (10054: message too large, ...)
  std::string description;  // the server's words, or what was wrong with the answer
};

PubAnswer ReadPubAnswer(std::string_view body);

}  // namespace common
