// The metricswriter's own numbers (docs/contract.md §7), registered once. Every counter resets
// when the process restarts, and its help text says so.
// Ownership: the families live in the Registry; this struct keeps references for the hot path.
// Thread-safety: every member may be used from any thread (see common/metrics.h).
#pragma once

#include "common/metrics.h"
#include "metricswriter/otlp_model.h"

namespace mw {

struct WriterMetrics {
  explicit WriterMetrics(core::metrics::Registry& r);

  core::metrics::Counter& received;
  core::metrics::Counter& batches_stored;
  core::metrics::Family<core::metrics::Counter>& points_stored;  // label: type
  core::metrics::Counter& duplicates;
  core::metrics::Family<core::metrics::Counter>& dead_lettered;         // label: reason
  core::metrics::Family<core::metrics::Counter>& dlq_publish_failures;  // label: cause
  core::metrics::Counter& nul_replacements;
  core::metrics::Counter& series_created;
  core::metrics::Gauge& series_cached;
  core::metrics::Gauge& database_up;
  core::metrics::Family<core::metrics::Counter>& database_retries;  // label: kind
  core::metrics::Gauge& held_batches;
  core::metrics::Gauge& held_bytes;
  core::metrics::Gauge& last_stored;
  core::metrics::Histogram& transaction_seconds;
  core::metrics::Histogram& batch_lag_seconds;
  core::metrics::Histogram& group_batches;

  core::metrics::Counter& Points(MetricType t) { return points_stored.With({MetricTypeName(t)}); }
  // cause: "too_large" (the server refused the dead letter for its size) or "unavailable".
  core::metrics::Counter& DlqPublishFailures(const char* cause) {
    return dlq_publish_failures.With({cause});
  }
};

}  // namespace mw
