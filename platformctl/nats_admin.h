// JetStream administration: read and apply stream settings, read stream, consumer and replica
// state, move a stream's leadership and rebuild a replica.
//
// Adapter over nats.c (see nats_client.h); callers see only our own types. Any thread may call
// these while the NatsClient lives; each call is one or more request/replies to the server. Every
// read retries what a cluster retries (no answer during an election, "cluster not available")
// within nats_admin::kClusterPatience (nats_admin_request.h).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/nats_client.h"
#include "common/result.h"
#include "common/topology.h"
#include "platformctl/backlog.h"
#include "platformctl/nats_admin_request.h"

namespace platformctl::nats_admin {

// Built on common's types (Result, NatsClient, Headers): used unqualified here.
using namespace common;  // NOLINT(google-build-using-namespace)

// The stream's settings as the server has them; nullopt when the stream does not exist.
Result<std::optional<topology::StreamSettings>> ReadSettings(NatsClient& client,
                                                             const std::string& stream);

// Creates a stream (or, for settings with a bucket, a KV bucket).
Status Create(NatsClient& client, const topology::StreamSettings& want);

// Applies the updatable fields of `want` onto the existing stream's configuration.
Status Update(NatsClient& client, const topology::StreamSettings& want);

// Messages, bytes, sequences, oldest message time, with the time the answer came; no consumers.
// patience: how long to retry what a cluster retries (0: one try, e.g. for an exporter that
// must answer its scrape).
Result<backlog::StreamReading> ReadState(NatsClient& client, const std::string& stream,
                                         Millis patience = kClusterPatience);

// ReadState and every consumer's counts. A consumer whose server does not answer (it died with
// the node that held it) is listed as offline instead of failing the reading.
Result<backlog::StreamReading> ReadStream(NatsClient& client, const std::string& stream,
                                          Millis patience = kClusterPatience);

// One page of a $JS.API.CONSUMER.LIST answer, parsed. nats-server 2.9 lists a consumer whose
// server is down without its name (its config, created time and an offline cluster entry) and
// names the ones that did not answer within its 4 s in "missing": both become offline readings
// named after "missing". Pure.
struct ConsumerPage {
  std::vector<backlog::ConsumerReading> consumers;
  int64_t total = 0;
  int64_t offset = 0;
  int64_t limit = 0;
};
Result<ConsumerPage> ParseConsumerList(std::string_view answer);

// Names of every stream on the server (KV buckets appear as KV_<bucket>).
Result<std::vector<std::string>> StreamNames(NatsClient& client,
                                             Millis patience = kClusterPatience);

// The max payload (headers + payload) of the server this client is connected to, from its INFO.
int64_t MaxPayload(NatsClient& client);

// The replicas of a stream as its leader reports them.
struct Replica {
  std::string name;  // server name
  bool leader = false;
  bool current = false;  // caught up with the leader's log
  bool offline = false;  // the leader hears nothing from it
  uint64_t lag = 0;      // log entries behind the leader
  double active_seconds_ago = 0;
};
struct ReplicaSet {
  int configured = 1;  // the stream's num_replicas
  // More than one replica: a raft group, whose log on every replica holds what the stream
  // stored until that replica's next snapshot (one replica has no raft group in nats-server 2.9).
  bool raft = false;
  std::vector<Replica> peers;  // the leader first; fewer than configured after a peer removal
  uint64_t messages = 0, first_seq = 0, last_seq = 0, num_deleted = 0;
  std::string Leader() const;
  // Every configured replica is a peer, current, online and without lag.
  bool AllCurrent() const;
};
Result<ReplicaSet> ReadReplicas(NatsClient& client, const std::string& stream);
// Pure: the same from a $JS.API.STREAM.INFO answer.
Result<ReplicaSet> ParseReplicas(std::string_view stream_info_answer);

// Asks the stream's leader to step down; the cluster elects another replica.
Status StepDown(NatsClient& client, const std::string& stream);

// Removes server `peer` from the stream's replicas (it deletes its copy: store and raft log).
// Judged by what the server did, not by its answer: with no spare server to take its place
// nats-server 2.9 and 2.10 answer 10075 "peer remap failed" and remove it anyway, while 2.15
// answers the same and keeps it. So after the answer (success or 10075) the stream's replicas
// are read back for up to kPeerRemovalWait; the removal is done only once the peer is no longer
// among them, else a kPermanent error names it and the replicas (nothing was deleted).
inline constexpr Millis kPeerRemovalWait{10'000};
Status RemovePeer(NatsClient& client, const std::string& stream, const std::string& peer);
// Pure: RemovePeer's judgement of one read-back. `answer`: what the server answered (e.g. its
// 10075 error), named in the error.
Status JudgePeerRemoval(const std::string& stream, const std::string& peer, const ReplicaSet& after,
                        const std::string& answer);

// Sets the stream's replica count (a raw update of its current configuration).
Status SetReplicas(NatsClient& client, const std::string& stream, int replicas);

}  // namespace platformctl::nats_admin
