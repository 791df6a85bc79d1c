// The redrive tasks' records in the KV bucket dlq_tasks (dlq/task.h encodes them): opened,
// read and written patiently, as every platformctl request is (a cluster that answers nothing,
// an election after a node died, is asked again for up to the cluster patience, 30 s).
//
// Runs on the calling thread; the KvBucket is borrowed.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/nats_kv.h"
#include "common/result.h"
#include "platformctl/dlq/run.h"
#include "platformctl/dlq/task.h"

namespace platformctl::dlq::task_store {

// A task's record and the revision it was read at (the next write's compare-and-set).
struct Loaded {
  TaskRecord t;
  uint64_t rev = 0;
};

// The bucket; kInvalid when it cannot be used (platformctl init makes it).
common::Result<std::unique_ptr<common::KvBucket>> OpenBucket(RunEnv& env);
// Creates (no `last`) or updates by compare-and-set the task's record; its new revision.
common::Result<uint64_t> WriteTask(common::KvBucket& kv, const TaskRecord& t,
                                   std::optional<uint64_t> last);
// nullopt when there is no task of that name; kInvalid for a record that is no task's.
common::Result<std::optional<Loaded>> Load(common::KvBucket& kv, const std::string& name);
// Every task, by name; records that are no task's are left out.
common::Result<std::vector<TaskRecord>> LoadAll(common::KvBucket& kv);

}  // namespace platformctl::dlq::task_store
