// The metadata JetStream writes into a delivered message's reply subject (its "ack subject"),
// read without I/O. Both formats nats-server sends are read:
//   v1 (every server; the default through 2.15):
//     $JS.ACK.<stream>.<consumer>.<delivered>.<stream seq>.<consumer seq>.<timestamp>.<pending>
//   v2 (2.14+, with the js_ack_fc_v2 feature flag; ADR-15), 11 tokens or more (later tokens,
//   e.g. a random one, are ignored):
//     $JS.ACK.<domain>.<account hash>.<stream>.<consumer>.<delivered>.<stream seq>.<consumer
//     seq>.<timestamp>.<pending>[.<more>...]
// Anything else (another token count, an empty token, a number that is not all digits or does
// not fit) is no ack subject. Pure: safe from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace common::ack_subject {

struct Meta {
  int format = 1;           // 1 or 2
  std::string_view domain;  // v2: the JetStream domain ("_": none); v1: empty
  std::string_view stream;  // views into the subject parsed: valid while it is
  std::string_view consumer;
  uint64_t delivered = 0;  // how many times this message was delivered, this one included
  uint64_t stream_seq = 0;
  uint64_t consumer_seq = 0;
  int64_t timestamp_ns = 0;  // when the stream stored it, Unix ns
  uint64_t pending = 0;      // messages the consumer still had to deliver after this one
};

std::optional<Meta> Parse(std::string_view reply);

}  // namespace common::ack_subject
