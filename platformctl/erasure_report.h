// What a purge or an erasure (`platformctl dlq purge`, `platformctl erase`) did and did not do to
// every copy of the erased messages, as one report: per replica of the DLQ stream whether it
// erased them, and what is not yet true (a replica that was down or behind, the raft logs until
// their next snapshot, the acknowledged work-queue originals until their block goes), with the
// command that checks it later (`platformctl dlq verify`) and how to force what can be forced.
//
// What nats-server 2.9.10 does, which the sentences rely on (tests/cluster/erasure_test.cpp
// greps every node's store for the payloads):
// - an erase is a raft entry: every replica that applies it from the log overwrites the
//   message in its own block file; a replica that catches up from a snapshot instead (it was
//   down while the leader compacted its log) only marks them deleted, and the bytes stay;
// - every replica's raft log of the stream keeps the stored messages until that replica's next
//   snapshot: every 2 minutes plus up to 1 (a period fixed when the replica started), and when
//   the server stops gracefully; a leader step-down snapshots only a replica that never did;
// - removing a replica (peer remove) deletes its store and raft log; re-added, it is rebuilt
//   from a snapshot of what the stream holds now;
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
#include "platformctl/dlq_select.h"
#include "platformctl/nats_admin.h"

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
};

// before / after: the DLQ stream's replicas when the run began and after it (re-read until
// the current ones have no lag). origin_messages: each origin stream's message count now (a
// stream missing from it: unknown).
ErasureReport MakeErasureReport(const QueueInfo& q,
                                const platformctl::nats_admin::ReplicaSet& before,
                                const platformctl::nats_admin::ReplicaSet& after,
                                const ErasureFacts& facts,
                                const std::map<std::string, uint64_t>& origin_messages);

void PrintErasureText(const ErasureReport& r, std::ostream& out);
// A JSON object: {"raft","configured","replicas":[{"name","leader","erased","state"}],
// "not_yet":[...],"done":[...],"erased_seqs","verify_command","replicas_ok"}, on one line.
std::string ErasureJson(const ErasureReport& r);

// The sentences `verify` and the report share.
std::string RaftLogSentence(const QueueInfo& q);
std::string SnapshotCatchUpSentence(const QueueInfo& q, const std::string& replica);

}  // namespace platformctl::dlq
