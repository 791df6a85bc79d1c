// Reading the raft logs of a stream's replicas (raft_state.h says what they hold and why it
// matters for an erasure), through the system account's monitoring requests:
// $SYS.REQ.SERVER.PING.JSZ finds the account that holds the stream's raft group,
// $SYS.REQ.SERVER.PING.RAFTZ reads the group on every server (nats-server 2.10 and later). The
// NATS user needs both imported from the system account (the deployment's nats role does it for
// the platformctl and provisioner users; scripts/stack for its cluster).
//
// Adapter over nats.c: any thread may call these while the NatsClient lives.
#pragma once

#include <string>
#include <vector>

#include "common/nats_client.h"
#include "common/result.h"
#include "platformctl/nats_admin_request.h"
#include "platformctl/raft_state.h"

namespace platformctl::nats_admin {

inline constexpr const char* kRaftzSubject = "$SYS.REQ.SERVER.PING.RAFTZ";
inline constexpr const char* kJszSubject = "$SYS.REQ.SERVER.PING.JSZ";

struct RaftGroup {
  std::string stream;
  std::string account;                // the JetStream account that holds the stream
  std::string group;                  // its raft group (S-R3F-...)
  std::vector<std::string> replicas;  // the stream's replicas when it was found, leader first
};

// The stream's raft group (from its stream info; nats-server 2.9 names none: an error saying so)
// and the account that holds it.
Result<RaftGroup> FindRaftGroup(NatsClient& client, const std::string& stream);

// Every answering server's state of the group: the answers that came within the client's request
// timeout (sooner once every replica answered). An error when no server answered at all (the
// user may not send the request, or nats-server is older than 2.10).
Result<std::vector<raft::LogState>> ReadRaftLogs(NatsClient& client, const RaftGroup& g);

}  // namespace platformctl::nats_admin
