// Redrive tasks against NATS: `platformctl dlq replay --task NAME` records the replay in the KV
// bucket dlq_tasks and keeps its record current while it runs (progress, heartbeat); `dlq task
// list|cancel|resume` read and change those records from any platformctl. The decisions are in
// dlq/task.h; the replay itself is RunReplay (dlq/run.h).
//
// Runs on the calling thread; the RunEnv's client and stop flag are borrowed.
#pragma once

#include <string>

#include "platformctl/dlq/run.h"
#include "platformctl/dlq/task.h"

namespace platformctl::dlq {

struct TaskStart {
  std::string name;
  QueueInfo queue;
  Selection::Spec spec;
  std::string describe;
  ReplayOptions replay;  // rate, json, to_subject
  bool allow_parallel = false;
};

// Exit codes as every dlq command's: 0 done, 1 partly done or stopped, 2 refused (a task of that
// name exists, another task holds the DLQ, the bucket is missing), 3 no NATS.
int RunTaskStart(RunEnv& env, const TaskStart& start);
int RunTaskResume(RunEnv& env, const std::string& name, bool json);
// Asks the runner to stop after its current batch and waits up to `wait_ms` for it to say so;
// a task whose runner is gone (or that is stopped) is marked cancelled at once.
int RunTaskCancel(RunEnv& env, const std::string& name, int64_t wait_ms);
int RunTaskList(RunEnv& env, bool json);

}  // namespace platformctl::dlq
