#include "metricswriter/writer_metrics.h"

namespace mw {

using common::metrics::CountsSinceStart;
using common::metrics::ExponentialBuckets;

WriterMetrics::WriterMetrics(common::metrics::Registry& r)
    : received(r.AddCounter(
                    "metricswriter_messages_received_total",
                    CountsSinceStart("Messages fetched from API_METRICS, redeliveries included."))
                   .Get()),
      batches_stored(
          r.AddCounter("metricswriter_batches_stored_total",
                       CountsSinceStart("Batches whose points were committed to PostgreSQL."))
              .Get()),
      points_stored(r.AddCounter("metricswriter_points_stored_total",
                                 CountsSinceStart("Points committed to PostgreSQL, by point type."),
                                 {"type"})),
      duplicates(
          r.AddCounter("metricswriter_duplicates_skipped_total",
                       CountsSinceStart("Batches acknowledged without storing: their batch id was "
                                        "already stored (redelivery, replay, or a second writer)."))
              .Get()),
      dead_lettered(r.AddCounter(
          "metricswriter_dead_lettered_total",
          CountsSinceStart("Batches moved to API_DLQ, by reason: decode, content_type, "
                           "invalid_id, invalid_subject, db_rejected, crash_loop."),
          {"reason"})),
      dlq_publish_failures(r.AddCounter(
          "metricswriter_dlq_publish_failures_total",
          CountsSinceStart("Dead-letter publishes to API_DLQ that failed, by cause: too_large "
                           "(the server refused the message for its size: above its max "
                           "payload or API_DLQ's max message size) or unavailable (anything "
                           "else). The batch stays unacknowledged and is tried again."),
          {"cause"})),
      nul_replacements(
          r.AddCounter("metricswriter_nul_replacements_total",
                       CountsSinceStart("NUL characters replaced by U+FFFD in stored batches."))
              .Get()),
      series_created(
          r.AddCounter("metricswriter_series_resolved_total",
                       CountsSinceStart("Series ids looked up in or added to metrics.series "
                                        "(cache misses)."))
              .Get()),
      series_cached(
          r.AddGauge("metricswriter_series_cache_entries", "Series ids held in memory.").Get()),
      database_up(r.AddGauge("metricswriter_database_up",
                             "1 when the last PostgreSQL transaction or connection succeeded, "
                             "0 while the database is unavailable and batches are held (and on "
                             "an instance that has not led yet: it has no connection).")
                      .Get()),
      database_retries(
          r.AddCounter("metricswriter_database_retries_total",
                       CountsSinceStart("Failed PostgreSQL attempts that will be retried, by "
                                        "error kind (retryable, permanent)."),
                       {"kind"})),
      held_batches(r.AddGauge("metricswriter_held_batches",
                              "Batches fetched and not yet acknowledged (waiting for or in a "
                              "transaction).")
                       .Get()),
      held_bytes(r.AddGauge("metricswriter_held_bytes",
                            "Bytes charged for the batches held (as received, plus their "
                            "decoded form once decoded); at most "
                            "METRICSWRITER_MAX_BYTES_IN_FLIGHT, except for one batch that is "
                            "bigger on its own.")
                     .Get()),
      last_stored(r.AddGauge("metricswriter_last_store_timestamp_seconds",
                             "Unix time of the last commit that stored at least one batch.")
                      .Get()),
      transaction_seconds(r.AddHistogram("metricswriter_transaction_duration_seconds",
                                         "Time to store one group of batches (series, "
                                         "partitions, insert, COPY, commit).",
                                         ExponentialBuckets(0.001, 2, 14))
                              .Get()),
      batch_lag_seconds(r.AddHistogram("metricswriter_batch_lag_seconds",
                                       "Age of a batch when it was stored: commit time minus "
                                       "the time API_METRICS received it.",
                                       ExponentialBuckets(0.01, 2.5, 16))
                            .Get()),
      group_batches(r.AddHistogram("metricswriter_group_batches", "Batches per transaction group.",
                                   ExponentialBuckets(1, 2, 13))
                        .Get()) {
  // Present from the start: an alert on increase() needs a sample before the first failure.
  DlqPublishFailures("too_large");
  DlqPublishFailures("unavailable");
  // Every label set known at start, at 0: a rate() panel or an increase() alert reads 0, not
  // "no data", before the first event.
  for (size_t t = 0; t < kMetricTypes; ++t) Points(static_cast<MetricType>(t));
  for (const char* reason : kDeadLetterReasons) dead_lettered.With({reason});
  for (const char* kind : {"retryable", "permanent"}) database_retries.With({kind});
}

}  // namespace mw
