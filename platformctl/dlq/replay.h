// The decisions of `platformctl dlq replay|purge` and `platformctl erase`, without I/O: whether a
// DLQ message may go back to its origin and as what (docs/contract.md §3.4), how a run is
// paced, and the run's summary and progress line.
//
// Pure: no I/O, no clock (elapsed times are inputs); safe from any thread. A RunSummary is
// filled by one thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "common/nats_stream.h"
#include "common/result.h"
#include "platformctl/dlq/select.h"

namespace platformctl::dlq {

// NATS subject matching: '*' matches one token, '>' (last) one or more.
bool SubjectMatches(std::string_view pattern, std::string_view subject);

struct OriginStream {
  std::string name;
  std::vector<std::string> subjects;
};

// `original id + .replay.<dlq stream>.<dlq seq>` (docs/contract.md §3.4).
std::string ReplayMsgId(std::string_view original_id, std::string_view dlq_stream,
                        uint64_t dlq_seq);

// The longest original message id a replay takes over (a UUID or a batch id is far shorter).
inline constexpr size_t kMaxOriginalIdBytes = 256;

// Where a DLQ message's original message id is, in this order: the Sa-Dlq-Msg-Id header (our
// services write it); the DLQ copy's own Nats-Msg-Id when it is not one of ours
// (dead_letter::IsDlqMsgId: the system this one replaces stored the origin's id there); for the
// web queue, the event id in the payload (its JSON "id"). A candidate is usable when it is at
// most kMaxOriginalIdBytes of printable ASCII without spaces and something other than
// `.replay.<stream>.<seq>` suffixes (a replay of an earlier version could publish
// `.replay.WEB_DLQ.3`); an unusable one passes to the next. nullopt: none is usable.
std::optional<std::string> OriginalMsgId(const QueueInfo& q, const common::Headers& headers,
                                         std::string_view payload);

struct ReplayPlan {
  bool publish = false;
  std::string skip_why;    // when !publish: one sentence, the same for messages skipped alike
  common::OutMessage out;  // when publish
};

// headers: the DLQ message's stored headers. origin: the queue's origin stream as the server
// has it (nullopt: it does not exist). A message whose origin subject is no literal subject of
// the origin stream (dlq/subject.h: cut, a wildcard, white space) is skipped and kept, so the run
// goes on past it. A message without a usable original id (OriginalMsgId)
// is skipped and kept: a replay never publishes an id that starts with ".replay.". The published
// message keeps the payload and the origin's own headers (Content-Type matters to the
// metricswriter); Nats-* and Sa-Dlq-* are not copied.
ReplayPlan PlanReplay(const QueueInfo& q, uint64_t dlq_seq, const common::Headers& headers,
                      std::string payload, const std::optional<OriginStream>& origin);

enum class Outcome {
  kReplayed,      // published, the stream stored it, the DLQ copy is erased
  kAlreadyThere,  // the stream had it from an earlier run (duplicate ack); DLQ copy erased
  kErased,        // purge / erase: the DLQ copy is erased
  kGone,          // purge / erase: it was gone before we erased it (expired, erased meanwhile)
  kSkipped,       // kept in the DLQ on purpose (see why)
  kFailed,        // kept in the DLQ (or published but not erased): see why
};

class RunSummary {
 public:
  struct Group {
    std::string why;
    uint64_t count = 0;
    std::vector<uint64_t> seqs;  // the first few, for the report
  };

  void Add(uint64_t seq, Outcome o, const std::string& why = "");
  // The run ended before the selection did (Ctrl-C, NATS stopped answering).
  void MarkStopped(const std::string& why) { stopped_ = why; }

  uint64_t count(Outcome o) const { return counts_[static_cast<int>(o)]; }
  // A resumed task: outcomes of sequences up to `seq` were counted by the run before (its batch
  // was published when it died); counted() leaves them out, count() does not.
  void CountAbove(uint64_t seq) { count_above_ = seq; }
  uint64_t counted(Outcome o) const { return counted_[static_cast<int>(o)]; }
  uint64_t total() const;
  const std::optional<std::string>& stopped() const { return stopped_; }
  // Done: nothing skipped, nothing failed, not stopped early.
  bool complete() const;
  const std::vector<Group>& skipped() const { return skipped_; }
  const std::vector<Group>& failed() const { return failed_; }

 private:
  static void AddTo(std::vector<Group>& groups, uint64_t seq, const std::string& why);
  uint64_t counts_[6] = {};
  uint64_t counted_[6] = {};
  uint64_t count_above_ = 0;
  std::vector<Group> skipped_, failed_;
  std::optional<std::string> stopped_;
};

// How the summary names the command and its counters.
enum class RunKind { kReplay, kPurge, kErase };

// verdict: end with "<verb> partly done: exit code 1" when the run is not complete (a caller
// that has more to report prints its own verdict after it).
// continue_hint: how to go on after a stop ("" for none: a task says it itself).
void PrintSummaryText(const RunSummary& s, RunKind kind, const QueueInfo& q, std::ostream& out,
                      bool verdict = true,
                      const std::string& continue_hint = "run the same command again to continue");
void PrintSummaryJson(const RunSummary& s, RunKind kind, const QueueInfo& q,
                      const std::string& selection, uint64_t end_seq, std::ostream& out);

// One line for a terminal (no newline): "replay WEB_DLQ  1200 of at most 5000  ...".
std::string ProgressLine(const RunSummary& s, RunKind kind, const QueueInfo& q, uint64_t looked_at,
                         uint64_t at_most, double elapsed_seconds);

// --rate: "200", "200/s" or "0.5/s" messages per second.
common::Result<double> ParseRate(std::string_view text);

class Pacer {
 public:
  explicit Pacer(double per_second) : per_second_(per_second) {}
  // How long to wait before starting the next message, `now` after the run started; takes that
  // slot. Zero when unpaced. A run that fell behind (a slow publish) does not burst to catch
  // up: the next slot is one interval after the later of the planned slot and now.
  std::chrono::nanoseconds Next(std::chrono::nanoseconds now);

 private:
  double per_second_;
  std::chrono::nanoseconds next_{0};
};

}  // namespace platformctl::dlq
