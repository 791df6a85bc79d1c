// The replayer's Prometheus metrics, registered once and shared by its threads.
//
// Ownership: the Registry owns every metric; ReplayerMetrics holds references into it and must
// not outlive it. Thread-safety: every metric is safe to update from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/metrics.h"

namespace replayer {

struct ReplayerMetrics {
  explicit ReplayerMetrics(common::metrics::Registry& r);

  // Every series whose labels are known at start, at 0, so a rate() or increase() reads 0, not
  // "no data", before the first event: each dead-letter reason, and per Umami process its send
  // failure classes, cache tokens ignored, send durations and write fault; the byte limit.
  // Not preset: replayer_umami_process_up and replayer_umami_batch_route, whose 0 would say
  // "down" and "no route" before anything was asked (the leader's engine sets them).
  // Main thread, at start-up.
  void Preset(const std::vector<std::string>& processes, int64_t max_bytes_in_flight);

  common::metrics::Counter& fetched;
  common::metrics::Counter& redeliveries_received;
  common::metrics::Counter& stored;
  common::metrics::Family<common::metrics::Counter>& dead_lettered;  // {reason}
  common::metrics::Counter& duplicates_skipped;
  common::metrics::Counter& dropped_by_umami;
  common::metrics::Family<common::metrics::Counter>& send_failures;  // {process, class}
  common::metrics::Counter& outage_retries;
  common::metrics::Counter& write_fault_retries;
  common::metrics::Family<common::metrics::Gauge>& process_up;   // {process}
  common::metrics::Family<common::metrics::Gauge>& write_fault;  // {process}
  common::metrics::Gauge& held;
  common::metrics::Gauge& held_bytes;
  common::metrics::Gauge& held_bytes_limit;  // REPLAYER_MAX_BYTES_IN_FLIGHT
  common::metrics::Family<common::metrics::Counter>& tokens_ignored;        // {process}
  common::metrics::Family<common::metrics::Counter>& dlq_publish_failures;  // {cause}
  common::metrics::Gauge& sending;
  common::metrics::Gauge& lanes_active;
  common::metrics::Gauge& lanes_blocked;
  common::metrics::Gauge& sites_unknown;
  common::metrics::Family<common::metrics::Histogram>& send_seconds;  // {process}
  common::metrics::Histogram& age_at_store_seconds;
  common::metrics::Gauge& last_stored_timestamp;
  common::metrics::Gauge& nats_connected;
  common::metrics::Family<common::metrics::Gauge>& batch_route;  // {process}
  common::metrics::Counter& batches;
  common::metrics::Counter& batched_events;
};

// The reason label of a dead-letter: the reason sentence itself is bounded (we write them all).
inline const std::string kReasonPoison = "poison";

// Every reason label the engine core gives a dead letter (its kCode* constants,
// engine_core_state.h); preset at 0.
inline const std::vector<std::string> kDeadLetterCodes = {"failed_4_times", "visitor_overflow",
                                                          "poison", "crash_loop", "site_unknown"};
// The class label of replayer_send_failures_total (engine_observe.cpp, FailureClass).
inline const std::vector<std::string> kSendFailureClasses = {"network", "4xx", "5xx", "other"};

}  // namespace replayer
