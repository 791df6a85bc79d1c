// The raft logs of a stream's replicas, read from nats-server's raftz (2.10 and later): whether
// each one still holds entries from before an erasure.
//
// A clustered stream's raft group keeps, on every replica, a log (`wal`) of what was proposed:
// each stored message's payload among it. An erasure overwrites a message in the stream's block
// files, not in that log. The log is cut (compacted) up to the replica's last snapshot; what
// nats-server 2.10.27 and 2.15.1 do (tests/cluster/ctl_erasure_test.cpp greps every node's
// store): each replica snapshots its stream every 2 to 3 minutes when the stream changed, and
// compacting rewrites or removes the log's block files, so once a replica's oldest log entry
// (wal first_seq) is above the group's index committed when the erasure was done, no log file of
// that replica holds an erased payload. Every entry that carried one was committed before the
// erasure ended, so its index is at or below that committed index.
//
// Pure: parsing and the verdict; no I/O, no clock; safe from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace platformctl::raft {

// One replica's view of one raft group.
struct LogState {
  std::string server;
  uint64_t committed = 0;  // the group's commit index as this replica knows it
  uint64_t applied = 0;
  uint64_t first = 0;  // the oldest entry its log holds (first > last: it holds none)
  uint64_t last = 0;
  uint64_t entries = 0;
  uint64_t bytes = 0;
};

// One server's answer to $SYS.REQ.SERVER.PING.RAFTZ with {"account":A,"group":G}: the group's
// state there, nullopt when that server holds no replica of it. An error for an answer that is
// not a raftz one (e.g. the server's error answer).
common::Result<std::optional<LogState>> ParseRaftz(std::string_view answer,
                                                   const std::string& account,
                                                   const std::string& group);

// One server's answer to $SYS.REQ.SERVER.PING.JSZ with {"accounts":true,"streams":true}: the
// account that holds the stream whose raft group is `group`; "" when this server lists none.
std::string AccountOfGroup(std::string_view jsz_answer, const std::string& group);

// The raft group of a stream from its $JS.API.STREAM.INFO answer (cluster.raft_group, 2.10 and
// later); "" when the answer names none (nats-server 2.9, or a stream without a group).
std::string GroupOfStreamInfo(std::string_view stream_info_answer);

struct ReplicaLog {
  enum class State {
    kCompacted,  // its oldest entry is above the erasure's index
    kHolds,      // it still holds entries at or below that index
    kUnread,     // it did not answer (down, or not a replica any more)
  };
  std::string server;
  State state = State::kUnread;
  uint64_t first = 0;  // its oldest entry (kCompacted, kHolds)
};

struct LogVerdict {
  std::vector<ReplicaLog> replicas;  // in the order of the names given
  bool all_compacted = false;        // every replica named answered and is compacted
  bool answered_compacted = false;   // every replica that answered is compacted
  uint64_t erased_at = 0;
};

// replicas: the stream's replica names; states: the answers that came; erased_at: the group's
// committed index once the erasure was done.
LogVerdict JudgeLogs(const std::vector<std::string>& replicas, const std::vector<LogState>& states,
                     uint64_t erased_at);

// One stream's raft logs checked after an erasure: its group, the index every entry that
// carried an erased message is at or below, and what the replicas' logs hold.
struct LogCheck {
  std::string stream;
  std::string account, group;
  uint64_t erased_at = 0;
  LogVerdict verdict;
  std::string error;  // the logs could not be read: why (the verdict is then empty)
  bool ok() const { return error.empty() && verdict.all_compacted; }
};

// The highest committed index among the answers (0 when none).
uint64_t HighestCommitted(const std::vector<LogState>& states);

// "compacted past the erasure (its oldest entry: 412)", "STILL HOLDS entries 1..31 from before the
// erasure", "did not answer": what a line of the report says of one replica's log.
std::string Describe(const ReplicaLog& r, uint64_t erased_at);

}  // namespace platformctl::raft
