#include "platformctl/dlq_task.h"

#include <nlohmann/json.hpp>

namespace platformctl::dlq {

using nlohmann::json;

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

json Opt(const std::optional<std::string>& s) { return s ? json(*s) : json(nullptr); }

std::optional<std::string> OptOf(const json& j, const char* key) {
  if (!j.contains(key) || j[key].is_null()) return std::nullopt;
  return j[key].get<std::string>();
}

}  // namespace

std::string EncodeTask(const TaskRecord& t) {
  json j = {
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
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return common::Error::Invalid("a task record that is not a JSON object");
  }
  try {
    if (j.value("v", 0) != 1) return common::Error::Invalid("a task record of another version");
    TaskRecord t;
    t.name = j.at("name").get<std::string>();
    t.queue = j.at("queue").get<std::string>();
    const json& s = j.at("selection");
    t.selection.all = s.value("all", false);
    t.selection.from = OptOf(s, "from");
    t.selection.to = OptOf(s, "to");
    t.selection.key = OptOf(s, "key");
    t.selection.reason = OptOf(s, "reason");
    t.describe = j.value("describe", "");
    t.rate = j.value("rate", 0.0);
    t.to_subject = j.value("to_subject", "");
    t.end_seq = j.at("end_seq").get<uint64_t>();
    t.next_seq = j.at("next_seq").get<uint64_t>();
    t.counted_through = j.value("counted_through", uint64_t{0});
    t.replayed = j.value("replayed", uint64_t{0});
    t.already = j.value("already", uint64_t{0});
    t.skipped = j.value("skipped", uint64_t{0});
    t.failed = j.value("failed", uint64_t{0});
    auto state = ParseTaskState(j.at("state").get<std::string>());
    if (!state) return common::Error::Invalid("a task record with an unknown state");
    t.state = *state;
    t.runner = j.value("runner", "");
    t.started_ms = j.value("started_ms", int64_t{0});
    t.updated_ms = j.value("updated_ms", int64_t{0});
    t.note = j.value("note", "");
    t.parallel = j.value("parallel", false);
    if (!ValidTaskName(t.name) || !ParseQueue(t.queue)) {
      return common::Error::Invalid("a task record with an invalid name or queue");
    }
    return t;
  } catch (const json::exception&) {
    return common::Error::Invalid("a task record with a missing or mistyped field");
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
