#include "common/topology.h"

#include <algorithm>

#include "common/dead_letter.h"

namespace common::topology {

const char* RetentionName(Retention r) {
  switch (r) {
    case Retention::kLimits:
      return "limits";
    case Retention::kWorkQueue:
      return "work queue";
    case Retention::kInterest:
      return "interest";
  }
  return "?";
}

const char* ActionName(StreamPlan::Action a) {
  switch (a) {
    case StreamPlan::Action::kCreate:
      return "created";
    case StreamPlan::Action::kUnchanged:
      return "unchanged";
    case StreamPlan::Action::kUpdate:
      return "updated";
    case StreamPlan::Action::kConflict:
      return "CONFLICT";
  }
  return "?";
}

namespace {

StreamSettings Stream(std::string name, std::string subject, Retention retention, Millis max_age,
                      int64_t max_bytes, const TopologyConfig& c, bool allow_direct) {
  StreamSettings s;
  s.name = std::move(name);
  s.subjects = {std::move(subject)};
  s.retention = retention;
  s.replicas = c.replicas;
  s.max_age = max_age;
  s.duplicate_window = c.duplicate_window;
  s.allow_direct = allow_direct;
  // Full: the publisher is refused. A work queue never drops a message nobody has stored, a DLQ
  // never drops a dead letter (the service keeps the message and retries its dead-letter
  // publish, DLQPublishFailing fires).
  s.max_bytes = max_bytes;
  s.discard = Discard::kNew;
  return s;
}

StreamSettings Bucket(const std::string& bucket, Millis ttl, int64_t max_bytes,
                      const TopologyConfig& c) {
  StreamSettings s;
  s.name = "KV_" + bucket;
  s.bucket = bucket;
  s.subjects = {"$KV." + bucket + ".>"};
  s.retention = Retention::kLimits;
  s.replicas = c.replicas;
  s.max_age = ttl;
  // A KV bucket's duplicate window is capped by its TTL (the server requires it).
  s.duplicate_window = std::min<Millis>(ttl, std::chrono::minutes(2));
  s.max_msgs_per_subject = 1;
  s.allow_direct = true;
  // A full bucket refuses a new key rather than drop another (as nats.c creates buckets).
  s.max_bytes = max_bytes;
  s.discard = Discard::kNew;
  return s;
}

std::string Join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ",") + s;
  return out;
}

}  // namespace

int64_t WorkQueueMaxMsgSize(int64_t max_payload) {
  return max_payload > dead_letter::kHeaderRoom ? max_payload - dead_letter::kHeaderRoom : 0;
}

std::vector<StreamSettings> Desired(const TopologyConfig& c, int64_t max_payload) {
  std::vector<StreamSettings> all = {
      Stream(kWebEvents, std::string(kWebEventsSubjectPrefix) + "*", Retention::kWorkQueue,
             c.web_events_max_age, c.web_events_max_bytes, c, false),
      Stream(kApiMetrics, std::string(kApiMetricsSubjectPrefix) + "*", Retention::kWorkQueue,
             c.api_metrics_max_age, c.api_metrics_max_bytes, c, false),
      // DLQs are browsed by list/replay without consuming them: direct get keeps that cheap.
      Stream(kWebDlq, std::string(kWebDlqSubjectPrefix) + "*", Retention::kLimits,
             c.web_dlq_max_age, c.web_dlq_max_bytes, c, true),
      Stream(kApiDlq, std::string(kApiDlqSubjectPrefix) + "*", Retention::kLimits,
             c.api_dlq_max_age, c.api_dlq_max_bytes, c, true),
      Bucket(kLocksBucket, c.lock_ttl, kLocksMaxBytes, c),
      Bucket(kVisitStateBucket, c.visit_state_ttl, c.visit_state_max_bytes, c),
      Bucket(kStoredIdsBucket, c.stored_ids_ttl, c.stored_ids_max_bytes, c),
      Bucket(kDlqTasksBucket, std::chrono::hours(24 * 30), kDlqTasksMaxBytes, c),
      Bucket(kCrashGuardBucket, std::chrono::hours(24), kCrashGuardMaxBytes, c),
  };
  if (max_payload > 0) {
    for (auto& s : all) {
      if (s.retention == Retention::kWorkQueue) s.max_msg_size = WorkQueueMaxMsgSize(max_payload);
    }
  }
  return all;
}

int64_t ReservedBytes(const std::vector<StreamSettings>& all) {
  int64_t sum = 0;
  for (const auto& s : all) sum += s.max_bytes > 0 ? s.max_bytes : 0;
  return sum;
}

bool LowersMaxBytes(const StreamSettings& want, const StreamSettings& have) {
  return want.max_bytes > 0 && (have.max_bytes <= 0 || want.max_bytes < have.max_bytes);
}

StreamPlan PlanStream(const StreamSettings& want, const std::optional<StreamSettings>& have,
                      int64_t held_bytes) {
  using A = StreamPlan::Action;
  StreamPlan plan;
  if (!have) {
    plan.action = A::kCreate;
    return plan;
  }
  std::vector<std::string> conflicts;
  if (have->retention != want.retention) {
    conflicts.push_back(std::string("retention is ") + RetentionName(have->retention) +
                        ", expected " + RetentionName(want.retention));
  }
  if (have->file_storage != want.file_storage) {
    conflicts.push_back(std::string("storage is ") + (have->file_storage ? "file" : "memory") +
                        ", expected " + (want.file_storage ? "file" : "memory"));
  }
  auto want_subjects = want.subjects;
  auto have_subjects = have->subjects;
  std::sort(want_subjects.begin(), want_subjects.end());
  std::sort(have_subjects.begin(), have_subjects.end());
  bool foreign = false;
  for (const auto& s : have_subjects) {
    if (!std::binary_search(want_subjects.begin(), want_subjects.end(), s)) foreign = true;
  }
  if (foreign) {
    conflicts.push_back("subjects are " + Join(have_subjects) + ", expected " +
                        Join(want_subjects));
  }
  if (LowersMaxBytes(want, *have) && held_bytes > want.max_bytes) {
    conflicts.push_back("max bytes " + FormatSize(want.max_bytes) + " is below the " +
                        std::to_string(held_bytes) +
                        " bytes it holds: JetStream would delete its oldest messages to fit (let "
                        "it drain below the limit, or raise the limit)");
  }
  if (!conflicts.empty()) {
    plan.action = A::kConflict;
    plan.changes = std::move(conflicts);
    return plan;
  }
  if (have_subjects != want_subjects) {
    plan.changes.push_back("subjects " + Join(have_subjects) + " -> " + Join(want_subjects));
  }
  if (have->replicas != want.replicas) {
    plan.changes.push_back("replicas " + std::to_string(have->replicas) + " -> " +
                           std::to_string(want.replicas));
  }
  if (have->max_age != want.max_age) {
    plan.changes.push_back("max age " + FormatDuration(have->max_age) + " -> " +
                           FormatDuration(want.max_age));
  }
  if (have->duplicate_window != want.duplicate_window) {
    plan.changes.push_back("duplicate window " + FormatDuration(have->duplicate_window) + " -> " +
                           FormatDuration(want.duplicate_window));
  }
  if (have->max_msgs_per_subject != want.max_msgs_per_subject) {
    plan.changes.push_back("max messages per subject " +
                           std::to_string(have->max_msgs_per_subject) + " -> " +
                           std::to_string(want.max_msgs_per_subject));
  }
  if (have->max_msg_size != want.max_msg_size) {
    auto size = [](int64_t v) { return v < 0 ? std::string("unlimited") : std::to_string(v); };
    plan.changes.push_back("max message size " + size(have->max_msg_size) + " -> " +
                           size(want.max_msg_size));
  }
  if (have->max_bytes != want.max_bytes) {
    auto size = [](int64_t v) { return v < 0 ? std::string("unlimited") : FormatSize(v); };
    plan.changes.push_back("max bytes " + size(have->max_bytes) + " -> " + size(want.max_bytes));
  }
  if (have->discard != want.discard) {
    auto name = [](Discard d) { return d == Discard::kNew ? "new (refuse)" : "old (drop oldest)"; };
    plan.changes.push_back(std::string("when full, discard ") + name(have->discard) + " -> " +
                           name(want.discard));
  }
  if (have->allow_rollup != want.allow_rollup) {
    plan.changes.push_back(std::string("rollup headers ") +
                           (have->allow_rollup ? "allowed" : "refused") + " -> " +
                           (want.allow_rollup ? "allowed" : "refused"));
  }
  if (have->allow_direct != want.allow_direct) {
    plan.changes.push_back(std::string("direct get ") + (have->allow_direct ? "on" : "off") +
                           " -> " + (want.allow_direct ? "on" : "off"));
  }
  plan.action = plan.changes.empty() ? A::kUnchanged : A::kUpdate;
  return plan;
}

}  // namespace common::topology
