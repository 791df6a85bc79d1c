#include "platformctl/raft_state.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "platformctl/json_whole.h"

namespace platformctl::raft {
namespace {

// Read by type: an answer is input we do not control (another server version, a proxy).
using json_whole::CountAt;
using json_whole::StringAt;

const nlohmann::json* Object(const nlohmann::json& j, const std::string& key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it != j.end() && it->is_object() ? &*it : nullptr;
}

}  // namespace

common::Result<std::optional<LogState>> ParseRaftz(std::string_view answer,
                                                   const std::string& account,
                                                   const std::string& group) {
  auto j = nlohmann::json::parse(answer, nullptr, false);
  const nlohmann::json* server = Object(j, "server");
  if (server == nullptr) return common::Error::Permanent("raftz: an answer that is not a server's");
  if (const nlohmann::json* e = Object(j, "error")) {
    return common::Error::Permanent("raftz of " + StringAt(*server, "name") + ": " +
                                    StringAt(*e, "description"));
  }
  const nlohmann::json* data = Object(j, "data");
  if (data == nullptr) return common::Error::Permanent("raftz: an answer without data");
  const nlohmann::json* acc = Object(*data, account);
  const nlohmann::json* g = acc != nullptr ? Object(*acc, group) : nullptr;
  if (g == nullptr) return std::optional<LogState>();
  LogState s;
  s.server = StringAt(*server, "name");
  s.committed = CountAt(*g, "committed");
  s.applied = CountAt(*g, "applied");
  if (const nlohmann::json* wal = Object(*g, "wal")) {
    s.first = CountAt(*wal, "first_seq");
    s.last = CountAt(*wal, "last_seq");
    s.entries = CountAt(*wal, "messages");
    s.bytes = CountAt(*wal, "bytes");
  } else {
    return common::Error::Permanent("raftz of " + s.server + ": group " + group +
                                    " without its log (wal)");
  }
  if (s.server.empty()) return common::Error::Permanent("raftz: an answer without a server name");
  return std::optional<LogState>(std::move(s));
}

std::string AccountOfGroup(std::string_view jsz_answer, const std::string& group) {
  auto j = nlohmann::json::parse(jsz_answer, nullptr, false);
  const nlohmann::json* data = Object(j, "data");
  if (data == nullptr) return "";
  auto accounts = data->find("account_details");
  if (accounts == data->end() || !accounts->is_array()) return "";
  for (const auto& a : *accounts) {
    if (!a.is_object()) continue;
    auto streams = a.find("stream_detail");
    if (streams == a.end() || !streams->is_array()) continue;
    for (const auto& s : *streams) {
      const nlohmann::json* cl = Object(s, "cluster");
      if (cl != nullptr && StringAt(*cl, "raft_group") == group) return StringAt(a, "name");
      if (s.is_object() && StringAt(s, "stream_raft_group") == group) return StringAt(a, "name");
    }
  }
  return "";
}

std::string GroupOfStreamInfo(std::string_view stream_info_answer) {
  auto j = nlohmann::json::parse(stream_info_answer, nullptr, false);
  const nlohmann::json* cl = Object(j, "cluster");
  return cl != nullptr ? StringAt(*cl, "raft_group") : "";
}

LogVerdict JudgeLogs(const std::vector<std::string>& replicas, const std::vector<LogState>& states,
                     uint64_t erased_at) {
  LogVerdict v;
  v.erased_at = erased_at;
  v.all_compacted = !replicas.empty();
  v.answered_compacted = true;
  for (const auto& name : replicas) {
    ReplicaLog r;
    r.server = name;
    auto it = std::find_if(states.begin(), states.end(),
                           [&](const LogState& s) { return s.server == name; });
    if (it == states.end()) {
      r.state = ReplicaLog::State::kUnread;
      v.all_compacted = false;
    } else {
      r.first = it->first;
      r.state = it->first > erased_at ? ReplicaLog::State::kCompacted : ReplicaLog::State::kHolds;
      if (r.state == ReplicaLog::State::kHolds) {
        v.all_compacted = false;
        v.answered_compacted = false;
      }
    }
    v.replicas.push_back(std::move(r));
  }
  return v;
}

uint64_t HighestCommitted(const std::vector<LogState>& states) {
  uint64_t c = 0;
  for (const auto& s : states) c = std::max(c, s.committed);
  return c;
}

std::string Describe(const ReplicaLog& r, uint64_t erased_at) {
  switch (r.state) {
    case ReplicaLog::State::kCompacted:
      return "compacted past the erasure (its oldest entry: " + std::to_string(r.first) +
             ", the erasure's: " + std::to_string(erased_at) + ")";
    case ReplicaLog::State::kHolds:
      return "STILL HOLDS entries " + std::to_string(r.first) + ".." + std::to_string(erased_at) +
             " from before the erasure, until its next snapshot";
    case ReplicaLog::State::kUnread:
      break;
  }
  return "NOT READ: its server did not answer";
}

}  // namespace platformctl::raft
