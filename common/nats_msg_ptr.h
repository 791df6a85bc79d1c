// An owned natsMsg (nats.c): natsMsg_Destroy runs when its owner goes. Not thread-safe: one
// thread owns a message at a time, as nats.c's own calls require.
#pragma once

#include <nats/nats.h>

#include <memory>

namespace common {

struct NatsMsgDeleter {
  void operator()(natsMsg* m) const { natsMsg_Destroy(m); }
};
using NatsMsgPtr = std::unique_ptr<natsMsg, NatsMsgDeleter>;

}  // namespace common
