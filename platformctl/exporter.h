// platformctl streams --serve: JetStream's own stream and consumer numbers as Prometheus gauges.
//
// Why a separate exporter: the alert rules need the backlog age, held messages and ack activity
// even when no replayer or metricswriter runs (a stopped consumer exports nothing), so these
// numbers come from JetStream, read by this process on a timer or on every scrape.
//
// StreamGauges is pure (no I/O): it turns readings into gauge values, so tests feed it readings
// they built. ServeStreams owns the NATS connection, the reading loop and the HTTP endpoint.
// Ownership: StreamGauges borrows the Registry, which must outlive it. Threads: Record() and
// RecordFailure() may be called from any thread (they serialise on a mutex); ServeStreams runs
// on platformctl's main thread until SIGTERM/SIGINT.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/config.h"
#include "common/metrics.h"
#include "platformctl/backlog.h"

namespace platformctl {

struct ExporterOptions {
  std::string listen;               // host:port of /metrics and /healthz
  std::vector<std::string> only;    // stream names; empty = every stream on the server
  common::Millis interval{10'000};  // between readings; 0 = one reading per scrape
  // --dlq-reasons: also count WEB_DLQ's and API_DLQ's messages by reason (dlq/reasons.h),
  // reading at most this many new sequences of each per reading.
  bool dlq_reasons = false;
  uint64_t dlq_reasons_per_reading = 10'000;
};

class StreamGauges {
 public:
  explicit StreamGauges(common::metrics::Registry& registry);

  // One successful reading of every stream. A stream or consumer seen before but absent now
  // (deleted) reads NaN: the registry cannot drop a series, and a stale number would lie.
  void Record(const std::vector<platformctl::backlog::StreamReading>& readings,
              double read_seconds);
  void RecordFailure();
  // A DLQ's messages by reason label (DlqReasonTally::Counts) and those not counted yet.
  void RecordDlqReasons(const std::string& stream, const std::map<std::string, uint64_t>& counts,
                        uint64_t unread);

  // Unix ns of the last successful reading (0 = none yet).
  int64_t last_read_ns() const;

 private:
  using Key = std::vector<std::string>;  // {stream} or {stream, consumer}
  void Blank(const std::set<Key>& gone_streams, const std::set<Key>& gone_consumers);

  mutable std::mutex mu_;
  int64_t last_read_ns_ = 0;
  std::set<Key> streams_seen_;
  std::set<Key> consumers_seen_;
  // The last reading of each stream: left-behind messages are known from two (backlog.h).
  std::map<std::string, platformctl::backlog::StreamReading> previous_;
  std::vector<std::pair<common::metrics::Family<common::metrics::Gauge>*, bool>>
      all_;  // per_consumer

  common::metrics::Family<common::metrics::Gauge>& messages_;
  common::metrics::Family<common::metrics::Gauge>& bytes_;
  common::metrics::Family<common::metrics::Gauge>& max_bytes_;
  common::metrics::Family<common::metrics::Gauge>& first_seq_;
  common::metrics::Family<common::metrics::Gauge>& last_seq_;
  common::metrics::Family<common::metrics::Gauge>& removed_;
  common::metrics::Family<common::metrics::Gauge>& oldest_ts_;
  common::metrics::Family<common::metrics::Gauge>& oldest_age_;
  common::metrics::Family<common::metrics::Gauge>& consumer_count_;
  common::metrics::Family<common::metrics::Gauge>& left_behind_;
  common::metrics::Family<common::metrics::Gauge>& pending_;
  common::metrics::Family<common::metrics::Gauge>& unacked_;
  common::metrics::Family<common::metrics::Gauge>& max_ack_pending_;
  common::metrics::Family<common::metrics::Gauge>& redelivered_;
  common::metrics::Family<common::metrics::Gauge>& delivered_seq_;
  common::metrics::Family<common::metrics::Gauge>& ack_floor_seq_;
  common::metrics::Family<common::metrics::Gauge>& last_delivered_ts_;
  common::metrics::Family<common::metrics::Gauge>& last_ack_ts_;
  common::metrics::Family<common::metrics::Gauge>& waiting_pulls_;
  common::metrics::Family<common::metrics::Gauge>& dlq_messages_;  // {stream, reason}
  common::metrics::Family<common::metrics::Gauge>& dlq_unread_;    // {stream}
  common::metrics::Gauge& read_ts_;
  common::metrics::Gauge& read_seconds_;
  common::metrics::Gauge& read_ok_;
  common::metrics::Counter& read_failures_;
};

// Connects with the shared configuration (retrying until NATS answers), serves /metrics and
// /healthz on options.listen and reads JetStream until SIGTERM/SIGINT. Returns an exit code
// (kExitOk, kExitUsage when the endpoint cannot listen).
int ServeStreams(const common::CommonConfig& common, const ExporterOptions& options);

}  // namespace platformctl
