#include "replayer/replayer_metrics.h"

namespace replayer {

namespace {
std::string H(const char* text) { return common::metrics::CountsSinceStart(text); }
}  // namespace

ReplayerMetrics::ReplayerMetrics(common::metrics::Registry& r)
    : fetched(r.AddCounter("replayer_messages_fetched_total",
                           H("Messages fetched from WEB_EVENTS, redeliveries included."))
                  .Get()),
      redeliveries_received(
          r.AddCounter("replayer_redeliveries_received_total",
                       H("Messages JetStream delivered more than once (NumDelivered > 1)."))
              .Get()),
      stored(r.AddCounter("replayer_events_stored_total",
                          H("Events Umami accepted and stored (acked afterwards)."))
                 .Get()),
      dead_lettered(r.AddCounter("replayer_events_dead_lettered_total",
                                 H("Events moved to WEB_DLQ, by reason. A move is not progress."),
                                 {"reason"})),
      duplicates_skipped(
          r.AddCounter("replayer_duplicates_skipped_total",
                       H("Redelivered or replayed events already stored: acked, not re-sent."))
              .Get()),
      dropped_by_umami(
          r.AddCounter("replayer_events_dropped_by_umami_total",
                       H("Events Umami answered 200 without storing (bot user agents)."))
              .Get()),
      send_failures(r.AddCounter("replayer_send_failures_total",
                                 H("Failed sends by Umami process and class (network, 4xx, 5xx)."),
                                 {"process", "class"})),
      outage_retries(r.AddCounter("replayer_outage_retries_total",
                                  H("Failed sends whose health checks then failed: retried, not "
                                    "counted against the event."))
                         .Get()),
      write_fault_retries(r.AddCounter("replayer_write_fault_retries_total",
                                       H("Failed sends on a process that cannot write: retried at "
                                         "most every 30 s, not counted against the event."))
                              .Get()),
      process_up(r.AddGauge("replayer_umami_process_up",
                            "1 when the process's last health check passed (heartbeat and "
                            "collection probe), 0 when it failed.",
                            {"process"})),
      write_fault(r.AddGauge("replayer_umami_write_fault",
                             "1 while the process counts as unable to write.", {"process"})),
      held(r.AddGauge("replayer_held_messages",
                      "Messages fetched and not yet acked, dead-lettered or released.")
               .Get()),
      held_bytes(r.AddGauge("replayer_held_bytes",
                            "Bytes of the messages held: payload and headers, the parsed "
                            "event, and 2 KiB of records each (limit "
                            "REPLAYER_MAX_BYTES_IN_FLIGHT, exceeded by at most one "
                            "message).")
                     .Get()),
      held_bytes_limit(r.AddGauge("replayer_held_bytes_limit",
                                  "REPLAYER_MAX_BYTES_IN_FLIGHT: the most replayer_held_bytes "
                                  "may reach (plus one message).")
                           .Get()),
      tokens_ignored(r.AddCounter("replayer_cache_tokens_ignored_total",
                                  H("2xx answers of a stored event whose token place held no "
                                    "JWT-shaped token (ignored: the visitor's next event goes "
                                    "without one), by Umami process."),
                                  {"process"})),
      dlq_publish_failures(
          r.AddCounter("replayer_dlq_publish_failures_total",
                       H("WEB_DLQ publishes that failed, by cause: too_large (the server refuses "
                         "the copy for its size: an operator must act) or unavailable. The "
                         "event stays held and is tried again."),
                       {"cause"})),
      sending(r.AddGauge("replayer_sends_in_flight",
                         "Sends of events to Umami under way (health checks not included).")
                  .Get()),
      lanes_active(r.AddGauge("replayer_lanes_active", "Visitors with events held.").Get()),
      lanes_blocked(r.AddGauge("replayer_lanes_blocked",
                               "Visitors whose head event has failed while checks passed.")
                        .Get()),
      sites_unknown(r.AddGauge("replayer_sites_unknown",
                               "Websites Umami answered \"not found\" for: their events go to "
                               "WEB_DLQ unsent until one sent every 5 minutes is stored.")
                        .Get()),
      send_seconds(r.AddHistogram("replayer_send_duration_seconds",
                                  "Duration of POST /api/send or /api/batch, by Umami process.",
                                  common::metrics::ExponentialBuckets(0.001, 2, 14), {"process"})),
      age_at_store_seconds(
          r.AddHistogram(
               "replayer_event_age_at_store_seconds",
               "Now minus the event's accepted_at when Umami stored it: the end-to-end "
               "lag. Exists only while events flow; see the stream's oldest message age "
               "for the backlog.",
               {0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600, 14400, 86400, 259200})
              .Get()),
      last_stored_timestamp(
          r.AddGauge("replayer_last_stored_timestamp_seconds",
                     "Unix time of the last event stored by this process (0 = none yet).")
              .Get()),
      nats_connected(r.AddGauge("replayer_nats_connected", "1 while connected to NATS.").Get()),
      batch_route(r.AddGauge("replayer_umami_batch_route",
                             "1 when the process answered POST /api/batch (Umami 3.x), 0 when it "
                             "has none (Umami 2.10: events go one by one to /api/send).",
                             {"process"})),
      batches(r.AddCounter("replayer_batches_sent_total",
                           H("POST /api/batch requests Umami answered as a batch (a batch "
                             "reply; a 404 or 405, no such route, is not counted)."))
                  .Get()),
      batched_events(r.AddCounter("replayer_batched_events_total",
                                  H("Events sent inside those batches (answered as batches)."))
                         .Get()) {
  // Present from the start, so an alert on their increase has a series to read.
  dlq_publish_failures.With({"too_large"});
  dlq_publish_failures.With({"unavailable"});
}

void ReplayerMetrics::Preset(const std::vector<std::string>& processes,
                             int64_t max_bytes_in_flight) {
  for (const auto& code : kDeadLetterCodes) dead_lettered.With({code});
  for (const auto& url : processes) {
    for (const auto& cls : kSendFailureClasses) send_failures.With({url, cls});
    tokens_ignored.With({url});
    send_seconds.With({url});
    write_fault.With({url}).Set(0);
  }
  held_bytes_limit.Set(static_cast<double>(max_bytes_in_flight));
}

}  // namespace replayer
