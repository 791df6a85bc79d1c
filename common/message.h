// A message as data: the headers and the outgoing message every layer builds. Pure (no nats.c):
// the code that decides what to publish (dead letters, guard records) builds these, and only
// the adapter (common/nats_stream.h) turns them into nats.c calls. Plain values; copy freely.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace common {

using Headers = std::vector<std::pair<std::string, std::string>>;

struct OutMessage {
  std::string subject;
  std::string data;
  Headers headers;
  std::string msg_id;         // Nats-Msg-Id, for the stream's duplicate window
  std::string expect_stream;  // refuse unless this stream stores it
};

}  // namespace common
