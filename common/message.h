// A message as data: the headers and the outgoing message every layer builds. Pure (no nats.c):
// the code that decides what to publish (dead letters, guard records) builds these, and only
// the adapter (common/nats_stream.h) turns them into nats.c calls. Plain values; copy freely.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace common {

using Headers = std::vector<std::pair<std::string, std::string>>;

// The first value of header `key` (names compared exactly, as the writers spell them), or none.
inline std::optional<std::string> FindHeader(const Headers& h, std::string_view key) {
  for (const auto& [k, v] : h) {
    if (k == key) return v;
  }
  return std::nullopt;
}

struct OutMessage {
  std::string subject;
  std::string data;
  Headers headers;
  std::string msg_id;         // Nats-Msg-Id, for the stream's duplicate window
  std::string expect_stream;  // refuse unless this stream stores it
};

}  // namespace common
