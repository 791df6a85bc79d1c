// What a purge or an erasure (`platformctl dlq purge`, `platformctl erase`) did and did not do to
// every copy of the erased messages, as one report: per replica of the DLQ stream whether it
// erased them, per replica whether its raft log was compacted past the erasure (erasure_raft.h
// waits for it), and what is not yet true (a replica that was down or behind, a raft log not yet
// compacted, the acknowledged work-queue originals until their block goes), with the command
// that checks it later (`platformctl dlq verify`) and how to force what can be forced.
//
// What nats-server 2.10.27 and 2.15.1 do, which the sentences rely on
// (tests/cluster/ctl_erasure_test.cpp greps every node's store for the payloads):
// - an erase is a raft entry: every replica that applies it from the log overwrites the
//   message in its own block file; a replica that catches up from a snapshot instead (it was
//   down while the leader compacted its log) only marks them deleted, and the bytes stay;
// - every replica's raft log of the stream keeps the stored messages until that replica's next
//   snapshot, every 2 to 3 minutes while the stream changes (raft_state.h); a graceful stop
//   snapshots on 2.15.1 but not on 2.10.27, so only the periodic snapshot is relied on;
// - removing a replica (peer remove) deletes its store and raft log and, re-added, it is rebuilt
//   from a snapshot of what the stream holds now; 2.10.27 does so (answering 10075 "peer remap
//   failed" when no other server can take its place), 2.15.1 refuses it then (the same 10075)
//   and the replica stays as it was;
// - a work-queue acknowledgement removes a message without overwriting it: its bytes stay in
//   the block file until every message in that block is gone (the stream's last block is
//   truncated when the stream becomes empty).
//
// Pure: no I/O, no clock; safe from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "platformctl/dlq/select.h"
#include "platformctl/nats_admin.h"
#include "platformctl/raft_state.h"

namespace platformctl::dlq {

// "1-20,25,30-31" for sorted, distinct sequences; and back (at most kMaxVerifySeqs of them).
std::string FormatSeqRanges(const std::vector<uint64_t>& sorted_seqs);
inline constexpr uint64_t kMaxVerifySeqs = 10'000'000;
common::Result<std::vector<uint64_t>> ParseSeqRanges(std::string_view text);

// The origins of the erased DLQ messages, per origin stream (from Sa-Dlq-Stream and
// Sa-Dlq-Stream-Seq).
struct Originals {
  std::string stream;
  uint64_t count = 0;
  uint64_t first_seq = 0, last_seq = 0;
};

// Gathered while the run erases.
class ErasureFacts {
 public:
  void Erased(const Entry& e);
  std::vector<uint64_t> Seqs() const;  // sorted
  std::vector<Originals> OriginStreams() const;
  bool empty() const { return seqs_.empty(); }

 private:
  std::vector<uint64_t> seqs_;
  std::map<std::string, Originals> originals_;
};

struct ErasureReport {
  struct ReplicaLine {
    std::string name;
    bool leader = false;
    bool erased = false;  // current (online, no lag) both before and after the run
    std::string state;    // "leader", "current", "offline (last seen 14 s ago)", ...
  };
  bool raft = false;  // more than one replica
  int configured = 1;
  std::vector<ReplicaLine> replicas;
  std::vector<std::string> not_yet;  // one sentence each
  std::vector<std::string> done;     // what is true beyond the replicas (one sentence each)
  std::string verify_command;        // empty when nothing was erased
  std::string erased_seqs;           // FormatSeqRanges of them
  bool replicas_ok = true;           // every configured replica erased them: else exit 1
  // The raft logs of the DLQ stream and of the origin stream (for the acknowledged originals),
  // as read after the wait (erasure_raft.h); every replica's compacted past the erasure, else
  // exit 1.
  std::vector<raft::LogCheck> raft_logs;
  bool raft_logs_ok = true;
  bool ok() const { return replicas_ok && raft_logs_ok; }
};

// before / after: the DLQ stream's replicas when the run began and after it (re-read until
// the current ones have no lag). origin_messages: each origin stream's message count now (a
// stream missing from it: unknown). raft_logs: the checks of the streams' raft logs (empty
// when there is no raft group: one replica).
ErasureReport MakeErasureReport(const QueueInfo& q,
                                const platformctl::nats_admin::ReplicaSet& before,
                                const platformctl::nats_admin::ReplicaSet& after,
                                const ErasureFacts& facts,
                                const std::map<std::string, uint64_t>& origin_messages,
                                const std::vector<raft::LogCheck>& raft_logs = {});

void PrintErasureText(const ErasureReport& r, std::ostream& out);
// A JSON object: {"raft","configured","replicas":[{"name","leader","erased","state"}],
// "not_yet":[...],"done":[...],"erased_seqs","verify_command","replicas_ok"}, on one line.
std::string ErasureJson(const ErasureReport& r);

// The sentences `verify` and the report share.
std::string RaftLogSentence(const QueueInfo& q);
// What is not yet true of one raft log check (empty when every replica's log is compacted past
// the erasure); `verify`: the command that checks again.
std::vector<std::string> RaftLogNotYet(const raft::LogCheck& c, const std::string& verify);
// One line per replica: "<stream> on <server>: <Describe>".
std::vector<std::string> RaftLogLines(const raft::LogCheck& c);
// The check as JSON: {"stream","group","erased_at","ok","error","replicas":[{"name","state",
// "first"}]}.
std::string RaftLogJson(const raft::LogCheck& c);
std::string SnapshotCatchUpSentence(const QueueInfo& q, const std::string& replica);

}  // namespace platformctl::dlq
