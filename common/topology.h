// The streams and buckets of docs/contract.md §2 as data, and the plan that brings a server to
// them.
//
// Pure: no I/O. platformctl init reads what exists (jetstream.h), asks PlanStream() what to do,
// and applies it. Safe from any thread.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/config.h"

namespace common::topology {

inline constexpr const char* kWebEvents = "WEB_EVENTS";
inline constexpr const char* kApiMetrics = "API_METRICS";
inline constexpr const char* kWebDlq = "WEB_DLQ";
inline constexpr const char* kApiDlq = "API_DLQ";
inline constexpr const char* kWebEventsSubjectPrefix = "web.events.";
inline constexpr const char* kApiMetricsSubjectPrefix = "api.metrics.";
inline constexpr const char* kWebDlqSubjectPrefix = "dlq.web.";
inline constexpr const char* kApiDlqSubjectPrefix = "dlq.api.";
inline constexpr const char* kLocksBucket = "locks";
inline constexpr const char* kVisitStateBucket = "visit_state";
inline constexpr const char* kStoredIdsBucket = "replayer_stored";
// Redrive tasks (platformctl dlq replay --task): one record per task, kept 30 days.
inline constexpr const char* kDlqTasksBucket = "dlq_tasks";
// The crash-loop guard's markers (common/crash_guard.h), kept a day.
inline constexpr const char* kCrashGuardBucket = "crash_guard";

// Storage limits of the buckets no variable sizes (bytes per replica): `locks` holds two keys,
// `crash_guard` a marker per message being redelivered, `dlq_tasks` a record per redrive task.
inline constexpr int64_t kLocksMaxBytes = int64_t{1} << 20;
inline constexpr int64_t kCrashGuardMaxBytes = int64_t{64} << 20;
inline constexpr int64_t kDlqTasksMaxBytes = int64_t{64} << 20;

enum class Retention { kLimits, kWorkQueue, kInterest };
const char* RetentionName(Retention r);

// What a full stream does with a new message: refuse it (kNew: the publisher gets "maximum bytes
// exceeded", nothing stored is lost) or make room by dropping the oldest (kOld, JetStream's
// default).
enum class Discard { kOld, kNew };

struct StreamSettings {
  std::string name;                   // the stream name (KV_<bucket> for a bucket)
  std::string bucket;                 // non-empty for a KV bucket
  std::vector<std::string> subjects;  // kept sorted
  Retention retention = Retention::kLimits;
  bool file_storage = true;
  int replicas = 1;
  Millis max_age{0};  // 0 = unlimited
  Millis duplicate_window{0};
  int64_t max_msgs_per_subject = -1;  // KV history
  bool allow_direct = false;
  int64_t max_msg_size = -1;  // headers + payload, bytes; -1: the server's max payload
  int64_t max_bytes = -1;     // the stream's storage limit per replica; -1: unlimited
  Discard discard = Discard::kOld;
  // Whether a publish may carry Nats-Rollup (which purges the subject or the whole stream).
  // Never: nothing of ours purges, and a bucket nats.c creates allows it, so a user allowed to
  // write one key could empty the bucket (`locks`: every lease) with one publish.
  bool allow_rollup = false;
};

// Every stream and bucket platformctl init provisions, in creation order. max_payload: the
// server's max payload (its INFO); when positive, the work-queue streams get
// WorkQueueMaxMsgSize(max_payload), so a message whose DLQ copy would not fit is refused when it
// is published; the others are unlimited (the max payload bounds them).
std::vector<StreamSettings> Desired(const TopologyConfig& config, int64_t max_payload = 0);

// The bytes the streams and buckets of `all` reserve per replica (their max_bytes summed): the
// JetStream account needs at least this times the replicas (docs/contract.md §2).
int64_t ReservedBytes(const std::vector<StreamSettings>& all);

// The max payload less the room the DLQ copy's headers need (dead_letter::kHeaderRoom); 0 when
// the max payload is too small to leave any.
int64_t WorkQueueMaxMsgSize(int64_t max_payload);

struct StreamPlan {
  enum class Action { kCreate, kUnchanged, kUpdate, kConflict };
  Action action = Action::kUnchanged;
  std::vector<std::string> changes;  // "max age 72h -> 96h", or why it conflicts
};

// What to do to turn `have` (nullopt: absent) into `want`. A difference JetStream cannot apply in
// place (retention, storage, foreign subjects) is a conflict: reported, never recreated. So is a
// max_bytes below `held_bytes`, the bytes the stream holds now: JetStream would delete its
// oldest messages to fit the new limit.
StreamPlan PlanStream(const StreamSettings& want, const std::optional<StreamSettings>& have,
                      int64_t held_bytes = 0);

// Whether applying `want` over `have` would set a byte limit (new or lower) that the stream's
// current bytes may exceed: init then reads what it holds before planning.
bool LowersMaxBytes(const StreamSettings& want, const StreamSettings& have);

const char* ActionName(StreamPlan::Action a);

}  // namespace common::topology
