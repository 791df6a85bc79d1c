// After an erasure: marking the raft logs of the streams that held the erased messages and
// waiting until every replica's log is compacted past the mark (raft_state.h says why that is
// when no log file holds them any more), for `dlq purge`, `erase` and `dlq verify`.
//
// nats-server cuts a replica's log at its periodic snapshot, every 2 to 3 minutes while the stream
// changes; nothing a client sends forces one (2.10.27 does not snapshot on a graceful stop
// either). So the wait is bounded (RunEnv::raft_log_wait) and what is still not true then is
// reported.
//
// Runs on the calling thread; the RunEnv's client and stop flag are borrowed.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "platformctl/dlq/run.h"
#include "platformctl/raft_state.h"

namespace platformctl::dlq {

// Each stream's group and the highest committed index its replicas report now (`at`, when given,
// instead: the index an earlier erasure was done at). An unreadable one carries its error.
raft::LogCheck MarkRaftLog(RunEnv& env, const std::string& stream,
                           std::optional<uint64_t> at = std::nullopt);

// Re-reads the logs every few seconds until every replica that answers is compacted past its
// mark, env.raft_log_wait passed or a stop was requested; a line on env.err when the wait begins
// and when a replica's log is compacted. The checks hold the last reading.
void WaitRaftLogs(RunEnv& env, std::vector<raft::LogCheck>& checks);

}  // namespace platformctl::dlq
