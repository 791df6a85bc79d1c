#include "common/leader_terms.h"

#include <spdlog/spdlog.h>

#include <memory>

#include "common/server_probe.h"

namespace common {

TermsEnd RunLeaderTerms(const CommonConfig& common, NatsClient::Options options, StopFlag& stop,
                        ConnectionSlot& slot, metrics::Registry& registry, const std::string& key,
                        const TermWork& work) {
  while (!stop.stopping()) {
    auto client = NatsClient::Connect(common, options);
    if (!client) {
      if (stop.stopping()) {
        spdlog::info("{} stopped before NATS could be reached", key);
        return {};
      }
      return {TermsEnd::Kind::kConnectFailed, client.error()};
    }
    std::shared_ptr<NatsClient> nats = std::move(*client);
    slot.Set(nats);
    NatsStopGuard nats_stop(*nats, stop);
    // Logged, not enforced: `platformctl init` refuses an unsupported server (contract.md §1).
    LogServerVersion(*nats, key);
    LeaseKeeper lease(*nats, key, ThisProcessHolder(common.instance), registry);
    lease.Start();
    LeaseKeeper::Wait wait;
    while ((wait = lease.WaitForLeadership(stop)) == LeaseKeeper::Wait::kLeads) {
      StopFlag term(&stop);
      lease.BindTerm(&term);
      Status st = work(*nats, lease, term);
      lease.BindTerm(nullptr);
      lease.SetStatus({});
      if (!st) return {TermsEnd::Kind::kTermFailed, st.error()};
      if (!stop.stopping()) spdlog::info("waiting for the {} lease again", key);
    }
    if (wait != LeaseKeeper::Wait::kMove) break;
    options.avoid_url = nats->ConnectedUrl();
    spdlog::warn(
        "JetStream behind NATS server {} has answered nothing for {} s while connected (a node "
        "cut off from the others?): connecting to another server",
        options.avoid_url, lease.JetStreamSilentFor().count() / 1000);
    slot.Set(nullptr);
  }
  return {};
}

}  // namespace common
