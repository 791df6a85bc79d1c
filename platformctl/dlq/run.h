// `platformctl dlq list|replay|purge` against NATS: walks a DLQ (platformctl/nats_dlq), applies the
// selection and the decisions (dlq_select, dlq_replay), publishes and erases.
//
// Runs on the calling thread. The NatsClient and the StopFlag are borrowed. Publishes and erases
// go out in batches of pipelined requests (kBatch); a stop request is looked at between batches
// only, so a message that was published is always erased (or reported failed) before the run
// stops, and messages gathered for a batch that was not sent yet stay untouched in the DLQ.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "common/nats_client.h"
#include "common/result.h"
#include "common/stop_signal.h"
#include "platformctl/dlq/nats.h"
#include "platformctl/dlq/replay.h"
#include "platformctl/dlq/select.h"
#include "platformctl/erasure_report.h"

namespace platformctl::dlq {

// Exit code of purge without --yes: it only said what it would do (0-3 as for every command).
inline constexpr int kExitNotConfirmed = 4;

// The default of --raft-wait: longer than the longest snapshot period seen (2 minutes plus up
// to 1).
inline constexpr std::chrono::seconds kRaftLogWait{240};

struct RunEnv {
  common::NatsClient& client;
  common::StopFlag& stop;  // read between messages; WaitFor() paces
  std::ostream& out;
  std::ostream& err;
  bool progress = false;  // stdout and stderr are a terminal
  // How long an erasure waits for the raft logs to be compacted past it (erasure_raft.h).
  std::chrono::seconds raft_log_wait = kRaftLogWait;
};

int RunList(RunEnv& env, const QueueInfo& q, const Selection& sel, bool json, bool summary);
// How a replay runs beyond its selection: pace, destination, and for a task (dlq/task_run.h)
// where it resumes and whom it tells.
struct ReplayOptions {
  double rate = 0;  // messages per second; 0: unpaced
  bool json = false;
  // A subject of the origin stream every message goes to instead of its own (a quarantine or a
  // test consumer); empty: each message's origin subject.
  std::string to_subject;
  uint64_t start_seq = 0;  // resume here (0: the selection's start)
  uint64_t end_seq = 0;    // end here (0: the DLQ's last sequence now, or --to)
  // The walk's last sequence, once known.
  std::function<void(uint64_t end_seq)> started;
  // After every message: `next_seq`, below which every message is finished, and the summary;
  // `settled` when nothing is gathered but unpublished (the summary's counts then match
  // next_seq exactly). False: stop now (the task was cancelled or taken over); `why` says so.
  std::function<bool(uint64_t next_seq, const RunSummary& s, bool settled, std::string& why)>
      progress;
  // A batch was published and acknowledged; its DLQ copies are erased next. first_seq: the
  // batch's first (every message before it is finished); last_seq: the last message looked
  // at; stored, duplicates: how many the origin stream took, or had already.
  std::function<void(uint64_t first_seq, uint64_t last_seq, const RunSummary& s, uint64_t stored,
                     uint64_t duplicates)>
      published;
  uint64_t count_above = 0;  // RunSummary::CountAbove
  // At the end: the summary, whether the walk reached its end, and next_seq.
  std::function<void(const RunSummary& s, bool whole, uint64_t next_seq)> finished;
};

// --to-subject `to` against the origin stream as the server has it now (ToSubjectRefusal): an
// Invalid error says why it is refused (exit 2); empty passes. RunReplay checks it itself; a
// task checks it before it writes its record, so a refused one leaves no task behind.
common::Status CheckToSubject(common::NatsClient& client, const QueueInfo& q,
                              const std::string& to);
int RunReplay(RunEnv& env, const QueueInfo& q, const Selection& sel, const ReplayOptions& o);
int RunPurge(RunEnv& env, const QueueInfo& q, const Selection& sel, bool yes, bool json);

// Shared with `platformctl erase`.

// A walk over a DLQ up to its last sequence at the time of the call.
struct Walk {
  std::unique_ptr<platformctl::nats_dlq::StreamBrowser> browser;
  uint64_t end_seq = 0;
};
common::Result<Walk> OpenWalk(common::NatsClient& client, const QueueInfo& q,
                              const std::string& filter_subject, uint64_t start_seq,
                              int64_t start_time_ns, uint64_t end_seq_cap, bool headers_only);

// Hands the walk's messages to `visit` in order until the walk ends (true), or false when a
// stop request (recorded in `summary` as interrupted), a read error (recorded with its message)
// or `visit` returning false ended it first. `looked_at` counts the messages read. A stop is
// looked at before each read only, so what `visit` began for a message it finishes.
bool ForEachInWalk(RunEnv& env, Walk& walk, RunSummary& summary, uint64_t& looked_at,
                   const std::function<bool(platformctl::nats_dlq::StoredMessage&)>& visit);

// Prints the error and returns the exit code for it (3 when NATS did not answer, else 1).
int Fail(RunEnv& env, const common::Error& e);

inline constexpr const char* kInterrupted = "interrupted (SIGINT/SIGTERM)";
// Messages published or erased per round of pipelined requests.
inline constexpr size_t kBatch = 256;

Entry EntryOf(const QueueInfo& q, const platformctl::nats_dlq::StoredMessage& m);
double SecondsSince(std::chrono::steady_clock::time_point since);

// Gathers DLQ messages and erases them a batch at a time (purge, erase), recording each
// outcome in the summary and what was erased in the facts for the erasure report.
class EraseBatch {
 public:
  EraseBatch(RunEnv& env, const QueueInfo& q, RunSummary& summary, ErasureFacts& facts)
      : env_(env), q_(q), summary_(summary), facts_(facts) {}
  // Adds the message; erases the batch when it is full. False when NATS stopped answering (the
  // summary says so; the run must end).
  bool Add(const Entry& e);
  bool Flush();

 private:
  RunEnv& env_;
  const QueueInfo& q_;
  RunSummary& summary_;
  ErasureFacts& facts_;
  std::vector<Entry> entries_;
};

// The DLQ stream's replicas when an erasure begins (an error leaves them unknown: the report
// then says so and the run exits 1).
common::Result<platformctl::nats_admin::ReplicaSet> ReplicasBefore(RunEnv& env, const QueueInfo& q);
// After the run: the replicas again (waiting a few seconds for the current ones to apply the
// last erasures), the origin stream's count, and the report. Nothing erased: no waiting.
ErasureReport FinishErasure(RunEnv& env, const QueueInfo& q,
                            const common::Result<platformctl::nats_admin::ReplicaSet>& before,
                            const ErasureFacts& facts);
// The report in text after the summary, then the verdict ("<verb> partly done: exit code 1"
// when the summary is incomplete or a replica did not erase); the exit code.
int PrintErasure(RunEnv& env, const RunSummary& summary, RunKind kind, const QueueInfo& q,
                 const ErasureReport& report);
// The summary's JSON with "erasure" (ErasureJson) added and "complete" covering the replicas.
std::string ErasureSummaryJson(const RunSummary& summary, RunKind kind, const QueueInfo& q,
                               const std::string& selection, uint64_t end_seq,
                               const ErasureReport& report);

// A progress line on stderr, rewritten in place at most a few times a second; nothing when
// disabled.
class Progress {
 public:
  Progress(std::ostream& err, bool enabled);
  ~Progress();  // clears the line
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  void Show(const std::string& line, bool force = false);
  void Clear();

 private:
  std::ostream& err_;
  bool enabled_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace platformctl::dlq
