// `platformctl dlq verify` and `platformctl dlq rebuild`: checking later, replica by replica,
// that erased DLQ messages are gone from what the servers report, and forcing a replica that
// may still hold their bytes to be rebuilt (see erasure_report.h for nats-server's behaviour).
//
// verify asks each replica in turn: a message get is answered by the stream's leader only, so
// the leadership is moved with step-downs until every current replica has led once (a second
// or two without a leader each time; the services' dead-lettering retries meanwhile; at most 96
// moves or a minute, leader_tour.h says why so many). Then the raft logs: each replica's must be
// compacted past the erasure (erasure_raft.h; waited for). What no answer of the server can show
// (bytes a replica kept when it caught up from a snapshot) is said, with how to force it.
//
// rebuild removes one replica (nats-server deletes its copy of the stream and its raft log) and
// adds one back, which is built from a snapshot of the leader: it holds only what the stream
// holds now. It needs the provisioning user (stream update and peer removal). nats-server 2.15
// refuses the removal when no other server can take the replica's place (every server of a
// three-node cluster already holds one): the replica is read back, and a refusal ends the run
// with exit 1 naming the replica and the copies it keeps, and what to do instead.
//
// Run on the calling thread; the RunEnv's client and stop flag are borrowed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "platformctl/dlq/run.h"

namespace platformctl::dlq {

// Exit code: 0 every configured replica answered and holds none of `seqs`, and every replica's
// raft log of the stream is compacted past `raft_index` (the index the erasure was done at;
// nullopt: the index committed now), waited for up to env.raft_log_wait; 1 a replica could not be
// checked or still holds some, or a raft log was not read or not compacted; 3 NATS did not
// answer.
// not_erased: replicas the erasure reported as not erased (a snapshot catch-up keeps the bytes,
// which no answer shows): each fails the check (exit 1) and is named with how to rebuild it.
int RunVerify(RunEnv& env, const QueueInfo& q, const std::vector<uint64_t>& seqs,
              std::optional<uint64_t> raft_index, const std::vector<std::string>& not_erased,
              bool json);

// Exit code: 0 rebuilt and current; 1 refused (not a replica, the others not current) or not
// current in time; 3 NATS did not answer; 4 without --yes (it only said what it would do).
int RunRebuild(RunEnv& env, const QueueInfo& q, const std::string& replica, bool yes, bool json);

}  // namespace platformctl::dlq
