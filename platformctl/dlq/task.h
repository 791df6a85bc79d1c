// A redrive task (`platformctl dlq replay --task NAME`, `dlq task list|cancel|resume`): the
// record kept in the KV bucket dlq_tasks, one key per task, and the decisions about it (is its
// runner alive, may it be resumed or cancelled, does it hold its DLQ). docs/operations.md,
// "Redrive tasks".
//
// Progress is a sequence: every DLQ message below `next_seq` is finished (replayed and erased,
// found already there and erased, skipped, or failed and kept), so a resumed task starts there
// and never publishes a finished message again; a message published but not yet erased when
// its runner died is published again under the same message id, and the origin stream drops
// that copy (counted as already there).
//
// Pure: no I/O, no clock (times are inputs); safe from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "platformctl/dlq/select.h"

namespace platformctl::dlq {

// The runner writes its record at least this often while it runs...
inline constexpr int64_t kTaskHeartbeatMs = 2'000;
// ...and a running task whose record is older than this has lost its runner.
inline constexpr int64_t kTaskStaleMs = 30'000;

enum class TaskState { kRunning, kCancelling, kCancelled, kDone, kStopped };
const char* TaskStateName(TaskState s);
std::optional<TaskState> ParseTaskState(std::string_view s);

struct TaskRecord {
  std::string name;
  std::string queue;  // "web" or "api"
  Selection::Spec selection;
  std::string describe;    // the selection as the operator typed it, for reports
  double rate = 0;         // messages per second; 0: unpaced
  std::string to_subject;  // empty: each message's own origin subject
  uint64_t end_seq = 0;    // the DLQ's last sequence when the task began (or --to)
  uint64_t next_seq = 0;   // every message below it is finished; 0: nothing yet
  // The outcomes of every sequence up to it are in the counts: a batch published, its DLQ
  // copies being erased. A resumed run publishes those again (the stream drops the copies) and
  // does not count them twice.
  uint64_t counted_through = 0;
  uint64_t replayed = 0, already = 0, skipped = 0, failed = 0;
  TaskState state = TaskState::kRunning;
  std::string runner;                      // host:pid of the platformctl that runs it
  int64_t started_ms = 0, updated_ms = 0;  // unix ms; updated: the runner's heartbeat
  std::string note;                        // why it stopped, or who cancelled it
  bool parallel = false;                   // started with --allow-parallel
};

// [A-Za-z0-9_-], 1 to 64 characters: a KV key of its own and safe in a terminal.
bool ValidTaskName(std::string_view name);

std::string EncodeTask(const TaskRecord& t);
common::Result<TaskRecord> DecodeTask(std::string_view json);

// A running (or cancelling) task whose runner has not written for kTaskStaleMs.
bool RunnerGone(const TaskRecord& t, int64_t now_ms);
// The state a person should read: "running", "running, runner gone 45s", "cancelling", ...
std::string TaskStatus(const TaskRecord& t, int64_t now_ms);

// Why the task cannot be resumed now (empty: it can): a live runner, or it is done. A stopped
// or cancelled task resumes where it stopped (a cancelled one once ResumeBlockedBy is empty).
std::string ResumeRefusal(const TaskRecord& t, int64_t now_ms);
// A cancelled task no longer holds its DLQ, so another task may have taken it since: the
// tasks that hold the DLQ now and keep it from being resumed (none for a --allow-parallel task).
std::vector<std::string> ResumeBlockedBy(const TaskRecord& t, const std::vector<TaskRecord>& all);
// True when the task still holds its DLQ: not finished (running, cancelling, stopped).
bool HoldsQueue(const TaskRecord& t);
// The tasks among `others` that keep a new task on `queue` from starting (one per DLQ unless
// --allow-parallel).
std::vector<std::string> BlockingTasks(const std::vector<TaskRecord>& others,
                                       std::string_view queue);

}  // namespace platformctl::dlq
