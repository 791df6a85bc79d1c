// The metricswriter's own numbers (docs/contract.md §7), registered once. Every counter resets
// when the process restarts, and its help text says so.
// Ownership: the families live in the Registry; this struct keeps references for the hot path.
// Thread-safety: every member may be used from any thread (see common/metrics.h).
#pragma once

#include "common/metrics.h"
#include "metricswriter/otlp_model.h"

namespace mw {

// The reason label of metricswriter_dead_lettered_total: every one DeadLetter() is given
// (writer_intake.cpp, writer.cpp); preset at 0.
inline constexpr const char* kDeadLetterReasons[] = {
    "decode", "content_type", "invalid_id", "invalid_subject", "db_rejected", "crash_loop"};

struct WriterMetrics {
  explicit WriterMetrics(common::metrics::Registry& r);

  common::metrics::Counter& received;
  common::metrics::Counter& batches_stored;
  common::metrics::Family<common::metrics::Counter>& points_stored;  // label: type
  common::metrics::Counter& duplicates;
  common::metrics::Family<common::metrics::Counter>& dead_lettered;         // label: reason
  common::metrics::Family<common::metrics::Counter>& dlq_publish_failures;  // label: cause
  common::metrics::Counter& nul_replacements;
  common::metrics::Counter& series_created;
  common::metrics::Gauge& series_cached;
  common::metrics::Gauge& database_up;
  common::metrics::Family<common::metrics::Counter>& database_retries;  // label: kind
  common::metrics::Gauge& held_batches;
  common::metrics::Gauge& held_bytes;
  common::metrics::Gauge& last_stored;
  common::metrics::Histogram& transaction_seconds;
  common::metrics::Histogram& batch_lag_seconds;
  common::metrics::Histogram& group_batches;

  common::metrics::Counter& Points(MetricType t) { return points_stored.With({MetricTypeName(t)}); }
  // cause: "too_large" (the server refused the dead letter for its size) or "unavailable".
  common::metrics::Counter& DlqPublishFailures(const char* cause) {
    return dlq_publish_failures.With({cause});
  }
};

}  // namespace mw
