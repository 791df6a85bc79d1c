// The replayer's Prometheus metrics, registered once and shared by its threads.
//
// Ownership: the Registry owns every metric; ReplayerMetrics holds references into it and must
// not outlive it. Thread-safety: every metric is safe to update from any thread.
#pragma once

#include <string>

#include "common/metrics.h"

namespace replayer {

struct ReplayerMetrics {
  explicit ReplayerMetrics(core::metrics::Registry& r);

  core::metrics::Counter& fetched;
  core::metrics::Counter& redeliveries_received;
  core::metrics::Counter& stored;
  core::metrics::Family<core::metrics::Counter>& dead_lettered;  // {reason}
  core::metrics::Counter& duplicates_skipped;
  core::metrics::Counter& dropped_by_umami;
  core::metrics::Family<core::metrics::Counter>& send_failures;  // {process, class}
  core::metrics::Counter& outage_retries;
  core::metrics::Counter& write_fault_retries;
  core::metrics::Family<core::metrics::Gauge>& process_up;   // {process}
  core::metrics::Family<core::metrics::Gauge>& write_fault;  // {process}
  core::metrics::Gauge& held;
  core::metrics::Gauge& held_bytes;
  core::metrics::Family<core::metrics::Counter>& tokens_ignored;        // {process}
  core::metrics::Family<core::metrics::Counter>& dlq_publish_failures;  // {cause}
  core::metrics::Gauge& sending;
  core::metrics::Gauge& lanes_active;
  core::metrics::Gauge& lanes_blocked;
  core::metrics::Family<core::metrics::Histogram>& send_seconds;  // {process}
  core::metrics::Histogram& age_at_store_seconds;
  core::metrics::Gauge& last_stored_timestamp;
  core::metrics::Gauge& nats_connected;
};

// The reason label of a dead-letter: the reason sentence itself is bounded (we write them all).
inline const std::string kReasonPoison = "poison";

}  // namespace replayer
