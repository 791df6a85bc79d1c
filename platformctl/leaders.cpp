#include "platformctl/leaders.h"

#include <nlohmann/json.hpp>

#include <iomanip>

#include "common/nats_kv.h"
#include "common/timefmt.h"
#include "common/topology.h"

namespace platformctl {

namespace {
const char* const kServices[] = {"replayer", "metricswriter"};
}

core::Result<std::vector<LeaderView>> ReadLeaders(core::NatsClient& client) {
  auto bucket = core::KvBucket::Bind(client, core::topology::kLocksBucket);
  if (!bucket) return bucket.error();
  std::vector<LeaderView> views;
  for (const char* service : kServices) {
    LeaderView v;
    v.service = service;
    auto got = (*bucket)->Get(service);
    if (!got) return got.error();
    if (*got) {
      v.revision = (*got)->revision;
      v.holder = core::LeaseHolder::FromJson((*got)->value);
      if (!v.holder) v.raw = (*got)->value;
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
          << core::FormatRfc3339(v.holder->acquired_unix_ms * 1'000'000)
          << core::HumanSeconds(held < 0 ? 0 : held) << "\n";
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
                     {"since", core::FormatRfc3339(v.holder->acquired_unix_ms * 1'000'000)},
                     {"held_seconds", (now_unix_ms - v.holder->acquired_unix_ms) / 1000.0},
                     {"revision", v.revision}};
    }
    arr.push_back(std::move(j));
  }
  out << nlohmann::json{{"leaders", arr}, {"read_at", core::FormatRfc3339(now_unix_ms * 1'000'000)}}
             .dump()
      << "\n";
}

}  // namespace platformctl
