#include "platformctl/dlq/task.h"

#include <nlohmann/json.hpp>

#include "platformctl/json_whole.h"

namespace platformctl::dlq {

const char* TaskStateName(TaskState s) {
  switch (s) {
    case TaskState::kRunning:
      return "running";
    case TaskState::kCancelling:
      return "cancelling";
    case TaskState::kCancelled:
      return "cancelled";
    case TaskState::kDone:
      return "done";
    case TaskState::kStopped:
      return "stopped";
  }
  return "?";
}

std::optional<TaskState> ParseTaskState(std::string_view s) {
  for (auto t : {TaskState::kRunning, TaskState::kCancelling, TaskState::kCancelled,
                 TaskState::kDone, TaskState::kStopped}) {
    if (s == TaskStateName(t)) return t;
  }
  return std::nullopt;
}

bool ValidTaskName(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_';
    if (!ok) return false;
  }
  return true;
}

namespace {

nlohmann::json Opt(const std::optional<std::string>& s) {
  return s ? nlohmann::json(*s) : nlohmann::json(nullptr);
}

std::optional<std::string> OptOf(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || j[key].is_null()) return std::nullopt;
  return j[key].get<std::string>();
}

constexpr const char* kMistyped = "a task record with a missing or mistyped field";

// Thrown by Whole below; DecodeTask refuses the record as it does for a json::exception.
struct Mistyped {};

// A whole-number field: an integer within T's range (json_whole.h says why not get<T>), or
// `absent` when the record has no such member; anything else refuses the record.
template <typename T>
T Whole(const nlohmann::json& j, const char* key, std::optional<T> absent = std::nullopt) {
  auto it = j.find(key);
  if (it == j.end()) {
    if (!absent) throw Mistyped{};
    return *absent;
  }
  auto v = json_whole::Whole<T>(*it);
  if (!v) throw Mistyped{};
  return *v;
}

}  // namespace

std::string EncodeTask(const TaskRecord& t) {
  nlohmann::json j = {
      {"v", 1},
      {"name", t.name},
      {"queue", t.queue},
      {"selection",
       {{"all", t.selection.all},
        {"from", Opt(t.selection.from)},
        {"to", Opt(t.selection.to)},
        {"key", Opt(t.selection.key)},
        {"reason", Opt(t.selection.reason)}}},
      {"describe", t.describe},
      {"rate", t.rate},
      {"to_subject", t.to_subject},
      {"end_seq", t.end_seq},
      {"next_seq", t.next_seq},
      {"counted_through", t.counted_through},
      {"replayed", t.replayed},
      {"already", t.already},
      {"skipped", t.skipped},
      {"failed", t.failed},
      {"state", TaskStateName(t.state)},
      {"runner", t.runner},
      {"started_ms", t.started_ms},
      {"updated_ms", t.updated_ms},
      {"note", t.note},
      {"parallel", t.parallel},
  };
  return j.dump();
}

common::Result<TaskRecord> DecodeTask(std::string_view text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return common::Error::Invalid("a task record that is not a JSON object");
  }
  try {
    if (Whole<int>(j, "v", 0) != 1) {
      return common::Error::Invalid("a task record of another version");
    }
    TaskRecord t;
    t.name = j.at("name").get<std::string>();
    t.queue = j.at("queue").get<std::string>();
    const nlohmann::json& s = j.at("selection");
    t.selection.all = s.value("all", false);
    t.selection.from = OptOf(s, "from");
    t.selection.to = OptOf(s, "to");
    t.selection.key = OptOf(s, "key");
    t.selection.reason = OptOf(s, "reason");
    t.describe = j.value("describe", "");
    t.rate = j.value("rate", 0.0);
    t.to_subject = j.value("to_subject", "");
    t.end_seq = Whole<uint64_t>(j, "end_seq");
    t.next_seq = Whole<uint64_t>(j, "next_seq");
    t.counted_through = Whole<uint64_t>(j, "counted_through", 0);
    t.replayed = Whole<uint64_t>(j, "replayed", 0);
    t.already = Whole<uint64_t>(j, "already", 0);
    t.skipped = Whole<uint64_t>(j, "skipped", 0);
    t.failed = Whole<uint64_t>(j, "failed", 0);
    auto state = ParseTaskState(j.at("state").get<std::string>());
    if (!state) return common::Error::Invalid("a task record with an unknown state");
    t.state = *state;
    t.runner = j.value("runner", "");
    t.started_ms = Whole<int64_t>(j, "started_ms", 0);
    t.updated_ms = Whole<int64_t>(j, "updated_ms", 0);
    t.note = j.value("note", "");
    t.parallel = j.value("parallel", false);
    if (!ValidTaskName(t.name) || !ParseQueue(t.queue)) {
      return common::Error::Invalid("a task record with an invalid name or queue");
    }
    return t;
  } catch (const nlohmann::json::exception&) {
    return common::Error::Invalid(kMistyped);
  } catch (const Mistyped&) {
    return common::Error::Invalid(kMistyped);
  }
}

bool RunnerGone(const TaskRecord& t, int64_t now_ms) {
  bool live_state = t.state == TaskState::kRunning || t.state == TaskState::kCancelling;
  return live_state && now_ms - t.updated_ms > kTaskStaleMs;
}

std::string TaskStatus(const TaskRecord& t, int64_t now_ms) {
  std::string s = TaskStateName(t.state);
  if (RunnerGone(t, now_ms)) {
    s += ", runner gone " + std::to_string((now_ms - t.updated_ms) / 1000) + "s";
  }
  return s;
}

std::string ResumeRefusal(const TaskRecord& t, int64_t now_ms) {
  switch (t.state) {
    case TaskState::kDone:
      return "it is done";
    case TaskState::kCancelled:  // resumed where it was cancelled (ResumeBlockedBy first)
    case TaskState::kStopped:
      return "";
    case TaskState::kRunning:
    case TaskState::kCancelling:
      if (RunnerGone(t, now_ms)) return "";
      return "its runner " + t.runner + " is alive (it wrote " +
             std::to_string((now_ms - t.updated_ms) / 1000) +
             "s ago); a runner counts as gone after " + std::to_string(kTaskStaleMs / 1000) +
             "s without writing";
  }
  return "unknown state";
}

bool HoldsQueue(const TaskRecord& t) {
  return t.state == TaskState::kRunning || t.state == TaskState::kCancelling ||
         t.state == TaskState::kStopped;
}

std::vector<std::string> BlockingTasks(const std::vector<TaskRecord>& others,
                                       std::string_view queue) {
  std::vector<std::string> out;
  for (const auto& t : others) {
    if (t.queue == queue && HoldsQueue(t)) out.push_back(t.name);
  }
  return out;
}

std::vector<std::string> ResumeBlockedBy(const TaskRecord& t, const std::vector<TaskRecord>& all) {
  if (t.state != TaskState::kCancelled || t.parallel) return {};
  std::vector<TaskRecord> others;
  for (const auto& o : all) {
    if (o.name != t.name) others.push_back(o);
  }
  return BlockingTasks(others, t.queue);
}

}  // namespace platformctl::dlq
