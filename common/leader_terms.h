// The services' outer loop (replayer, metricswriter): connect to NATS, keep the service's lease
// in the KV bucket `locks` and run one leadership term at a time, until SIGTERM. When JetStream
// behind the connection answers nothing for a lease TTL while the connection stands (a node
// isolated in a minority: common/js_reach.h), the lease keeper and the connection are dropped
// and a new connection is made with that server last.
//
// Ownership: borrows everything passed; owns the connection and the lease keeper of the moment
// (the connection shared with `slot`, for /healthz). Call from the service's main thread.
#pragma once

#include <functional>
#include <string>

#include "common/config.h"
#include "common/lease_keeper.h"
#include "common/metrics.h"
#include "common/nats_client.h"
#include "common/result.h"
#include "common/stop_signal.h"

namespace common {

// One leadership term's work: returns when `term` stops (SIGTERM, or the lease lost). A failed
// Status ends every term: the service exits with it.
using TermWork = std::function<Status(NatsClient& nats, LeaseKeeper& lease, StopFlag& term)>;

struct TermsEnd {
  enum class Kind {
    kStopped,        // SIGTERM (also before NATS could be reached)
    kConnectFailed,  // a connection that can never be made (a TLS file nats.c cannot load)
    kTermFailed,     // the term's work failed
  };
  Kind kind = Kind::kStopped;
  Error error;  // for the two failures
};

// `key`: the service's lease and the name in its log lines. `options.retry_until_stopped` must
// be `stop`.
TermsEnd RunLeaderTerms(const CommonConfig& common, NatsClient::Options options, StopFlag& stop,
                        ConnectionSlot& slot, metrics::Registry& registry, const std::string& key,
                        const TermWork& work);

}  // namespace common
