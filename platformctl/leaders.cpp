#include "platformctl/leaders.h"

#include <nlohmann/json.hpp>

#include <iomanip>
#include <iterator>
#include <thread>

#include "common/nats_kv.h"
#include "common/timefmt.h"
#include "common/topology.h"
#include "platformctl/nats_admin_request.h"

namespace platformctl {

namespace {
const char* const kServices[] = {"replayer", "metricswriter"};
}

common::Result<std::vector<LeaderView>> ReadLeaders(common::NatsClient& client) {
  // In a cluster a direct get goes to any replica of KV_locks: one that is paused (SIGSTOP) or
  // just died still takes its share of them for a while and never answers. Those keys are
  // asked again (another replica answers) within the cluster patience.
  platformctl::nats_admin::Patience patience;
  auto bucket = common::KvBucket::Bind(client, common::topology::kLocksBucket);
  while (!bucket && bucket.error().kind == common::ErrorKind::kRetryable) {
    auto delay = patience.NextDelay();
    if (!delay) return bucket.error();
    std::this_thread::sleep_for(*delay);
    bucket = common::KvBucket::Bind(client, common::topology::kLocksBucket);
  }
  if (!bucket) return bucket.error();
  patience.Progress();
  const std::vector<std::string> keys(std::begin(kServices), std::end(kServices));
  std::vector<common::Result<std::optional<common::KvValue>>> got = (*bucket)->GetMany(keys);
  while (true) {
    std::vector<size_t> again;
    for (size_t i = 0; i < got.size(); ++i) {
      if (!got[i] && got[i].error().kind == common::ErrorKind::kRetryable) again.push_back(i);
    }
    if (again.empty()) break;
    auto delay = patience.NextDelay();
    if (!delay) {
      common::Error e = got[again.front()].error();
      e.message += " (gave up after " + std::to_string(patience.waited().count() / 1000) + " s)";
      return e;
    }
    std::this_thread::sleep_for(*delay);
    std::vector<std::string> retry;
    for (size_t i : again) retry.push_back(keys[i]);
    auto more = (*bucket)->GetMany(retry);
    for (size_t k = 0; k < again.size(); ++k) got[again[k]] = std::move(more[k]);
  }
  std::vector<LeaderView> views;
  for (size_t i = 0; i < keys.size(); ++i) {
    LeaderView v;
    v.service = keys[i];
    if (!got[i]) return got[i].error();
    if (*got[i]) {
      v.revision = (*got[i])->revision;
      v.holder = common::LeaseHolder::FromJson((*got[i])->value);
      if (!v.holder) v.raw = (*got[i])->value;
    }
    views.push_back(std::move(v));
  }
  return views;
}

void PrintLeadersText(const std::vector<LeaderView>& views, int64_t now_unix_ms,
                      std::ostream& out) {
  out << std::left << std::setw(15) << "SERVICE" << std::setw(44) << "LEADER" << std::setw(26)
      << "SINCE"
      << "FOR\n";
  for (const auto& v : views) {
    out << std::setw(15) << v.service;
    if (v.holder) {
      double held = static_cast<double>(now_unix_ms - v.holder->acquired_unix_ms) / 1000.0;
      out << std::setw(44) << v.holder->Describe() << std::setw(26)
          << common::FormatRfc3339(v.holder->acquired_unix_ms * 1'000'000)
          << common::HumanSeconds(held < 0 ? 0 : held) << "\n";
    } else if (!v.raw.empty()) {
      out << "unreadable lease value (" << v.raw.size() << " bytes): not written by this version\n";
    } else {
      out << "NONE: no instance holds the lease, so nothing consumes\n";
    }
  }
}

void PrintLeadersJson(const std::vector<LeaderView>& views, int64_t now_unix_ms,
                      std::ostream& out) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& v : views) {
    nlohmann::json j = {{"service", v.service}, {"leader", nullptr}};
    if (v.holder) {
      j["leader"] = {{"instance", v.holder->instance},
                     {"host", v.holder->host},
                     {"pid", v.holder->pid},
                     {"since", common::FormatRfc3339(v.holder->acquired_unix_ms * 1'000'000)},
                     {"held_seconds", (now_unix_ms - v.holder->acquired_unix_ms) / 1000.0},
                     {"revision", v.revision}};
    }
    arr.push_back(std::move(j));
  }
  out << nlohmann::json{{"leaders", arr},
                        {"read_at", common::FormatRfc3339(now_unix_ms * 1'000'000)}}
             .dump()
      << "\n";
}

}  // namespace platformctl
