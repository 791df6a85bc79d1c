// Test support for a JetStream cluster started by TestStack (StackOptions::nats_nodes = 3):
// which node leads a stream or a consumer, moving leadership by step-downs, which node a named
// client is connected to, and publishing through leader elections.
//
// Nodes are numbered 1..n as TestStack names them (server name nats-<j>); 0 means "none
// known" (no leader elected yet, or the answer did not come). Every call is a request to the
// cluster and may be made from any thread while the NatsClient lives.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/nats_client.h"
#include "common/nats_stream.h"
#include "common/result.h"
#include "tests/support/test_stack.h"

namespace testsupport {

// A client of the stack's NATS (every node's URL); throws when it cannot connect.
std::unique_ptr<common::NatsClient> ConnectNats(const TestStack& stack);
// A client configured from this process's environment as the services read it (NATS_URL, the
// TLS and credential variables: common::ReadCommonConfig), for the tools and benchmarks that
// run against a stack someone else started. A bad setting throws common::ConfigError.
common::Result<std::unique_ptr<common::NatsClient>> ConnectFromEnvironment();
// `platformctl init` against the stack's NATS (the streams and buckets the services expect), then
// ConnectNats; throws when either fails.
std::unique_ptr<common::NatsClient> InitAndConnect(const TestStack& stack);

// Plays the readers of a crash loop (common/crash_guard.h): takes `deliveries` deliveries of
// the `messages` messages the consumer `spec` holds, acking none (each comes back after the ack
// wait), then leaves the crash-loop marker of the one whose Nats-Msg-Id is `msg_id`, as a reader
// `instance` that died reading its last delivery at kDiedAtUnixMs would have, after `stops`
// readers had stopped on it before (Marker::stops). Returns that message's stream sequence; 0
// (and why, on stderr) when anything went otherwise.
inline constexpr int64_t kDiedAtUnixMs = 1765000000000;
uint64_t DieReading(common::NatsClient& client, const common::ConsumerSpec& spec, size_t messages,
                    uint64_t deliveries, const std::string& msg_id, const std::string& instance,
                    uint32_t stops = 0);

// A stream made by hand or by an older tool, not by platformctl init: limits retention, file
// storage, no direct gets unless asked.
struct RawStream {
  std::string name;
  std::string subject;
  int64_t max_msgs_per_subject = -1;
  bool allow_direct = false;
  int32_t max_msg_size = -1;  // -1: the server's limit
};
common::Status AddRawStream(common::NatsClient& client, const RawStream& spec);

// A raft group of JetStream: a stream (consumer empty) or one of its consumers.
struct RaftAsset {
  std::string stream;
  std::string consumer;
  std::string Name() const { return consumer.empty() ? stream : stream + "/" + consumer; }
};

// The node number in a server name "nats-<j>"; 0 for anything else.
int NodeOfServer(const std::string& server_name);

// The node leading the asset (JetStream stream or consumer info, cluster.leader); 0 when none.
int LeaderOf(common::NatsClient& client, const RaftAsset& asset);
// Which nodes each node has a route to, from their /routez: "nats-1 -> nats-2 nats-3; ...", each
// once however many pooled route connections lead there.
// A route missing on one side cuts that node's clients off from what the other leads.
std::string RouteMap(const TestStack& stack);
// The node leading the JetStream meta group, from node `ask`'s /jsz; 0 when unknown.
int MetaLeader(const TestStack& stack, int ask);

// Asks the asset's leader to step down (the cluster elects another).
common::Status StepDown(common::NatsClient& client, const RaftAsset& asset);

// Steps down every asset not led by `node` until `node` leads them all or timeout_ms passes
// (an election picks among the other replicas at random). Returns the assets it could not move.
std::vector<RaftAsset> GatherLeadership(common::NatsClient& client, int node,
                                        const std::vector<RaftAsset>& assets, int timeout_ms);

// The node a client whose connection name starts with `name_prefix` is connected to (from every
// node's /connz); 0 when none is.
int ConnectedNode(const TestStack& stack, const std::string& name_prefix);
// The same over the given monitoring URLs (node j = monitor_urls[j - 1]).
int ConnectedNode(const std::vector<std::string>& monitor_urls, const std::string& name_prefix);

// Publishes until the stream acks, for up to timeout_ms: while a stream has no leader (after a
// node died) a publish fails for a few seconds with "no responders" or a timeout. Every try
// carries the same Nats-Msg-Id, so the stream stores the message once even when a try whose
// answer was lost had stored it. *tries (optional) gets the number of publishes made.
common::Result<common::PubAck> PublishUntilAcked(common::NatsClient& client,
                                                 const common::OutMessage& m, int timeout_ms,
                                                 int* tries = nullptr);

}  // namespace testsupport
