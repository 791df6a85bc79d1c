// `platformctl dlq verify` and `platformctl dlq rebuild`: checking later, replica by replica,
// that erased DLQ messages are gone from what the servers report, and forcing a replica that
// may still hold their bytes to be rebuilt (see erasure_report.h for nats-server's behaviour).
//
// verify asks each replica in turn: a message get is answered by the stream's leader only, so
// the leadership is moved with step-downs until every current replica has led once (a second
// or two without a leader each time; the services' dead-lettering retries meanwhile; at most 96
// moves or a minute, leader_tour.h says why so many). What no
// answer of the server can show (bytes a replica kept when it caught up from a snapshot, raft
// logs until their next snapshot) is said, with how to force it.
//
// rebuild removes one replica (nats-server deletes its copy of the stream and its raft log) and
// adds one back, which is built from a snapshot of the leader: it holds only what the stream
// holds now. It needs the provisioning user (stream update and peer removal).
//
// Run on the calling thread; the RunEnv's client and stop flag are borrowed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "platformctl/dlq_run.h"

namespace platformctl::dlq {

// Exit code: 0 every configured replica answered and holds none of `seqs`; 1 a replica could
// not be checked or still holds some; 3 NATS did not answer.
int RunVerify(RunEnv& env, const QueueInfo& q, const std::vector<uint64_t>& seqs, bool json);

// Exit code: 0 rebuilt and current; 1 refused (not a replica, the others not current) or not
// current in time; 3 NATS did not answer; 4 without --yes (it only said what it would do).
int RunRebuild(RunEnv& env, const QueueInfo& q, const std::string& replica, bool yes, bool json);

}  // namespace platformctl::dlq
