// platformctl leaders: who holds the replayer and metricswriter leases (KV bucket `locks`),
// since when. Called from the main thread only.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "common/lease.h"
#include "common/nats_client.h"
#include "common/result.h"

namespace platformctl {

struct LeaderView {
  std::string service;
  std::optional<common::LeaseHolder> holder;  // none: nobody leads
  std::string raw;                            // the value when it is not a holder record
  uint64_t revision = 0;
};

common::Result<std::vector<LeaderView>> ReadLeaders(common::NatsClient& client);
void PrintLeadersText(const std::vector<LeaderView>& views, int64_t now_unix_ms, std::ostream& out);
void PrintLeadersJson(const std::vector<LeaderView>& views, int64_t now_unix_ms, std::ostream& out);

}  // namespace platformctl
