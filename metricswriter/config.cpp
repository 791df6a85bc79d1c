#include "metricswriter/config.h"

#include "common/topology.h"

namespace mw {

WriterOptions ReadWriterOptions(common::ConfigReader& r) {
  using std::chrono::hours;
  using std::chrono::milliseconds;
  using std::chrono::minutes;
  using std::chrono::seconds;
  WriterOptions o;
  auto url = r.Optional("DATABASE_URL");
  if (!url || url->empty()) r.Fail("DATABASE_URL", "is required (a libpq URL or conninfo)");
  o.store.database_url = url.value_or("");
  o.store.retention_days = static_cast<int>(r.Int("METRICS_RETENTION_DAYS", 30, 1, 3650));
  o.store.batch_id_retention_days =
      static_cast<int>(r.Int("METRICSWRITER_BATCH_ID_RETENTION_DAYS", 35, 1, 3650));
  o.store.statement_timeout =
      r.Duration("METRICSWRITER_STATEMENT_TIMEOUT", seconds(60), seconds(1), hours(1));
  o.store.series_cache_max =
      static_cast<size_t>(r.Int("METRICSWRITER_SERIES_CACHE", 200'000, 1000, 50'000'000));
  o.group_batches = static_cast<size_t>(r.Int("METRICSWRITER_GROUP_BATCHES", 500, 1, 1000));
  o.connections = static_cast<size_t>(r.Int("METRICSWRITER_CONNECTIONS", 2, 1, 4));
  o.queued_groups = o.connections;
  o.group_points = static_cast<size_t>(r.Int("METRICSWRITER_GROUP_POINTS", 50'000, 1, 10'000'000));
  o.group_linger =
      r.Duration("METRICSWRITER_GROUP_LINGER", milliseconds(100), milliseconds(1), seconds(10));
  o.retry_max = r.Duration("METRICSWRITER_RETRY_MAX", seconds(10), milliseconds(100), minutes(10));
  o.retry_base = std::min(o.retry_base, o.retry_max);
  o.too_large_retry = r.Duration("METRICSWRITER_DLQ_RETRY", seconds(60), seconds(1), hours(1));
  o.max_bytes_in_flight = r.Size("METRICSWRITER_MAX_BYTES_IN_FLIGHT", int64_t{64} << 20,
                                 int64_t{1} << 20, int64_t{16} << 30);
  o.consumer.stream = common::topology::kApiMetrics;
  o.consumer.durable = r.String("METRICSWRITER_CONSUMER", "metricswriter");
  o.consumer.filter_subject = std::string(common::topology::kApiMetricsSubjectPrefix) + "*";
  o.consumer.ack_wait = r.Duration("METRICSWRITER_ACK_WAIT", seconds(30), seconds(3), minutes(10));
  // A property of the durable consumer, fixed when it is created: nats.c refuses to bind with a
  // different value, so it must not follow the group size. It covers everything one writer
  // holds at most: a group per connection and one more than that queued, each of at most
  // 1,000 batches (9,000 with 4 connections).
  o.consumer.max_ack_pending = kMaxAckPending;
  o.consumer.max_deliver = -1;  // an outage must never exhaust a batch's deliveries
  // Room in nats.c for what the writer asks for at once (at most the budget) plus one message
  // as big as a server allows (64 MiB), so a fetch can never be dropped as a slow consumer.
  o.consumer.pending_bytes_limit = o.max_bytes_in_flight + (int64_t{64} << 20);
  return o;
}

ServiceConfig ReadServiceConfig(common::ConfigReader& r) {
  ServiceConfig c;
  c.common = common::ReadCommonConfig(r, kDefaultMetricsListen);
  c.writer = ReadWriterOptions(r);
  return c;
}

}  // namespace mw
