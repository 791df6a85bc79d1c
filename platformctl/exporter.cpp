#include "platformctl/exporter.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <limits>
#include <memory>

#include "common/dead_letter.h"
#include "common/http_server.h"
#include "common/nats_client.h"
#include "common/stop_signal.h"
#include "common/timefmt.h"
#include "platformctl/app.h"
#include "platformctl/dlq/reasons.h"
#include "platformctl/dlq/run.h"
#include "platformctl/dlq/select.h"
#include "platformctl/streams.h"

namespace platformctl {

using common::metrics::Family;
using common::metrics::Gauge;
using platformctl::backlog::StreamReading;

namespace {

constexpr const char* kRead =
    " Read from JetStream by platformctl streams --serve; jetstream_read_timestamp_seconds says "
    "when. NaN after the stream or consumer was deleted.";

std::string H(const char* text) { return std::string(text) + kRead; }

double Seconds(int64_t unix_ns) { return unix_ns > 0 ? static_cast<double>(unix_ns) / 1e9 : 0; }

const std::vector<std::string> kStream = {"stream"};
const std::vector<std::string> kConsumer = {"stream", "consumer"};

}  // namespace

StreamGauges::StreamGauges(common::metrics::Registry& r)
    : messages_(r.AddGauge("jetstream_stream_messages",
                           H("Messages held by the stream (pending and unacked together)."),
                           kStream)),
      bytes_(r.AddGauge("jetstream_stream_bytes", H("Bytes held by the stream."), kStream)),
      max_bytes_(r.AddGauge("jetstream_stream_max_bytes",
                            H("The stream's storage limit, bytes (-1: unlimited). Full, a stream "
                              "of ours refuses a publish (discard new)."),
                            kStream)),
      first_seq_(r.AddGauge("jetstream_stream_first_seq", H("Sequence of the oldest message held."),
                            kStream)),
      last_seq_(r.AddGauge("jetstream_stream_last_seq",
                           H("Sequence of the newest message stored: only rises, so rate() over "
                             "it is the in-rate."),
                           kStream)),
      removed_(r.AddGauge("jetstream_stream_removed_messages",
                          H("Messages removed since the stream began: last_seq minus messages "
                            "held (on a work queue, acknowledged; also expired or erased). Only "
                            "rises, so rate() over it is the out-rate."),
                          kStream)),
      oldest_ts_(r.AddGauge("jetstream_stream_oldest_message_timestamp_seconds",
                            H("Unix time the oldest held message was stored (0 when empty)."),
                            kStream)),
      oldest_age_(r.AddGauge("jetstream_stream_oldest_message_age_seconds",
                             H("Backlog age: reading time minus the oldest held message's time "
                               "(0 when empty). Exists with no consumer running."),
                             kStream)),
      consumer_count_(
          r.AddGauge("jetstream_stream_consumers", H("Consumers on the stream."), kStream)),
      left_behind_(r.AddGauge(
          "jetstream_stream_left_behind_messages",
          H("Work queue only: held messages its consumer acked that JetStream did not remove "
            "(the oldest message's age is then theirs); 0 until two readings."),
          kStream)),
      pending_(r.AddGauge("jetstream_consumer_pending",
                          H("Messages not yet delivered to the consumer (never added to unacked)."),
                          kConsumer)),
      unacked_(r.AddGauge("jetstream_consumer_unacked",
                          H("Messages delivered and waiting for an ack."), kConsumer)),
      max_ack_pending_(r.AddGauge("jetstream_consumer_max_ack_pending",
                                  H("The consumer's limit of unacked messages (-1 unlimited); "
                                    "unacked at this limit is a saturated consumer."),
                                  kConsumer)),
      redelivered_(r.AddGauge("jetstream_consumer_redelivered",
                              H("Unacked messages delivered more than once."), kConsumer)),
      delivered_seq_(r.AddGauge("jetstream_consumer_delivered_consumer_seq",
                                H("Consumer sequence of the last delivery (rises with every "
                                  "delivery, redeliveries included)."),
                                kConsumer)),
      ack_floor_seq_(r.AddGauge("jetstream_consumer_ack_floor_consumer_seq",
                                H("Consumer sequence below which everything is acked; it stays "
                                  "put while acks stop (a lower bound when acks come out of "
                                  "order)."),
                                kConsumer)),
      last_delivered_ts_(r.AddGauge("jetstream_consumer_last_delivered_timestamp_seconds",
                                    H("Unix time of the consumer's last delivery (0 = never)."),
                                    kConsumer)),
      last_ack_ts_(r.AddGauge("jetstream_consumer_last_ack_floor_timestamp_seconds",
                              H("Unix time the ack floor last moved (0 = never)."), kConsumer)),
      waiting_pulls_(r.AddGauge("jetstream_consumer_waiting_pulls",
                                H("Pull requests waiting: a consumer asking for more."),
                                kConsumer)),
      dlq_messages_(r.AddGauge(
          "jetstream_dlq_messages",
          "Dead letters held by a DLQ by reason: the Sa-Dlq-Reason sentence up to its first ':' "
          "(at most 32 per DLQ, then other; none without one). Read by platformctl streams "
          "--serve --dlq-reasons from the dead letters' headers, new sequences only; "
          "jetstream_dlq_unread_messages says how many are not counted yet.",
          {"stream", "reason"})),
      dlq_unread_(r.AddGauge("jetstream_dlq_unread_messages",
                             "Dead letters held whose reason jetstream_dlq_messages does not count "
                             "yet (read at most 10,000 a reading; 0 once caught up).",
                             kStream)),
      read_ts_(r.AddGauge("jetstream_read_timestamp_seconds",
                          "Unix time of the last successful reading of JetStream (0 = none yet).")
                   .Get()),
      read_seconds_(r.AddGauge("jetstream_read_duration_seconds",
                               "How long the last successful reading of every stream took.")
                        .Get()),
      read_ok_(r.AddGauge("jetstream_read_ok",
                          "1 when the last attempt to read JetStream succeeded, 0 when it failed.")
                   .Get()),
      read_failures_(r.AddCounter("jetstream_read_failures_total",
                                  "Failed readings of JetStream. Counts since this process "
                                  "started (resets on restart).")
                         .Get()) {
  for (auto* f : {&messages_, &bytes_, &max_bytes_, &first_seq_, &last_seq_, &removed_, &oldest_ts_,
                  &oldest_age_, &consumer_count_, &left_behind_})
    all_.emplace_back(f, false);
  for (auto* f : {&pending_, &unacked_, &max_ack_pending_, &redelivered_, &delivered_seq_,
                  &ack_floor_seq_, &last_delivered_ts_, &last_ack_ts_, &waiting_pulls_})
    all_.emplace_back(f, true);
}

void StreamGauges::Record(const std::vector<StreamReading>& readings, double read_seconds) {
  std::lock_guard lock(mu_);
  std::set<Key> streams;
  std::set<Key> consumers;
  int64_t read_at = 0;
  for (const auto& r : readings) {
    const Key s{r.name};
    streams.insert(s);
    read_at = std::max(read_at, r.read_at_ns);
    auto before = previous_.find(r.name);
    auto view = before == previous_.end() ? platformctl::backlog::Compute(std::nullopt, r)
                                          : platformctl::backlog::Compute(before->second, r);
    previous_[r.name] = r;
    if (r.work_queue) {
      // 0 until two readings: the age alert waits for messages that are not left behind.
      left_behind_.With(s).Set(static_cast<double>(view.left_behind.value_or(0)));
    }
    messages_.With(s).Set(static_cast<double>(r.messages));
    bytes_.With(s).Set(static_cast<double>(r.bytes));
    max_bytes_.With(s).Set(static_cast<double>(r.max_bytes));
    first_seq_.With(s).Set(static_cast<double>(r.first_seq));
    last_seq_.With(s).Set(static_cast<double>(r.last_seq));
    removed_.With(s).Set(r.last_seq > r.messages ? static_cast<double>(r.last_seq - r.messages)
                                                 : 0);
    oldest_ts_.With(s).Set(view.oldest_ns ? Seconds(*view.oldest_ns) : 0);
    oldest_age_.With(s).Set(view.oldest_age_seconds.value_or(0));
    consumer_count_.With(s).Set(static_cast<double>(r.consumers.size()));
    for (const auto& c : r.consumers) {
      if (c.offline) continue;  // no numbers: its series go blank rather than report zeros
      const Key k{r.name, c.name};
      consumers.insert(k);
      pending_.With(k).Set(static_cast<double>(c.pending));
      unacked_.With(k).Set(static_cast<double>(c.unacked));
      max_ack_pending_.With(k).Set(static_cast<double>(c.max_ack_pending));
      redelivered_.With(k).Set(static_cast<double>(c.redelivered));
      delivered_seq_.With(k).Set(static_cast<double>(c.delivered_seq));
      ack_floor_seq_.With(k).Set(static_cast<double>(c.ack_floor_seq));
      last_delivered_ts_.With(k).Set(Seconds(c.last_delivered_ns));
      last_ack_ts_.With(k).Set(Seconds(c.last_acked_ns));
      waiting_pulls_.With(k).Set(static_cast<double>(c.waiting_pulls));
    }
  }
  std::set<Key> gone_streams;
  std::set<Key> gone_consumers;
  for (const auto& s : streams_seen_)
    if (!streams.count(s)) gone_streams.insert(s);
  for (const auto& c : consumers_seen_)
    if (!consumers.count(c)) gone_consumers.insert(c);
  Blank(gone_streams, gone_consumers);
  streams_seen_.insert(streams.begin(), streams.end());
  consumers_seen_.insert(consumers.begin(), consumers.end());
  if (read_at == 0) read_at = common::NowUnixNs();  // no streams at all: the reading still counts
  last_read_ns_ = read_at;
  read_ts_.Set(Seconds(read_at));
  read_seconds_.Set(read_seconds);
  read_ok_.Set(1);
}

void StreamGauges::Blank(const std::set<Key>& gone_streams, const std::set<Key>& gone_consumers) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (auto& [family, per_consumer] : all_) {
    for (const auto& k : per_consumer ? gone_consumers : gone_streams) family->With(k).Set(nan);
  }
}

void StreamGauges::RecordDlqReasons(const std::string& stream,
                                    const std::map<std::string, uint64_t>& counts,
                                    uint64_t unread) {
  std::lock_guard lock(mu_);
  for (const auto& [reason, n] : counts) {
    dlq_messages_.With({stream, reason}).Set(static_cast<double>(n));
  }
  dlq_unread_.With({stream}).Set(static_cast<double>(unread));
}

void StreamGauges::RecordFailure() {
  std::lock_guard lock(mu_);
  read_ok_.Set(0);
  read_failures_.Inc();
}

int64_t StreamGauges::last_read_ns() const {
  std::lock_guard lock(mu_);
  return last_read_ns_;
}

namespace {

// --dlq-reasons: the new sequences of each DLQ read, headers only (the payload never reaches
// us), into its tally, and the gauges set. A walk that fails is said once and tried again at the
// next reading from where it stopped; the stream gauges are not affected.
void CountDlqReasons(common::NatsClient& nats, const std::vector<StreamReading>& readings,
                     const ExporterOptions& options, std::map<std::string, DlqReasonTally>& tallies,
                     StreamGauges& gauges, bool& failing) {
  for (const auto& r : readings) {
    std::optional<dlq::QueueInfo> q;
    for (auto queue : {dlq::Queue::kWeb, dlq::Queue::kApi}) {
      if (dlq::InfoFor(queue).dlq_stream == r.name) q = dlq::InfoFor(queue);
    }
    if (!q) continue;
    DlqReasonTally& tally = tallies[r.name];
    if (auto range =
            tally.Plan(r.first_seq, r.last_seq, r.messages, options.dlq_reasons_per_reading)) {
      auto walk = dlq::OpenWalk(nats, *q, q->dlq_prefix + "*", range->from, 0, range->to,
                                /*headers_only=*/true);
      common::Status st = common::Status::Ok();
      if (!walk) st = walk.error();
      while (walk && st) {
        auto m = walk->browser->Next();
        if (!m) {
          st = m.error();
        } else if (!*m) {
          tally.Walked(range->to);
          break;
        } else {
          tally.Add((*m)->seq, (*m)->Header(common::dead_letter::kReason));
        }
      }
      if (!st) {
        if (!failing) spdlog::warn("cannot read {}'s reasons: {}", r.name, st.error().message);
        failing = true;
      } else if (failing) {
        spdlog::info("reading the DLQs' reasons again");
        failing = false;
      }
    }
    gauges.RecordDlqReasons(r.name, tally.Counts(), tally.Unread(r.messages));
  }
}

}  // namespace

int ServeStreams(const common::CommonConfig& common, const ExporterOptions& options) {
  // A service logs at the configured level (platformctl's commands quieten "info" to "warn").
  spdlog::set_level(spdlog::level::from_str(common.log_level));
  common::StopSignal stop;  // before the NATS connection starts its threads

  common::metrics::Registry registry;
  StreamGauges gauges(registry);
  common::metrics::AddProcessMetrics(registry);
  // /healthz answers from the start, 503 until NATS is reached; the connection is declared
  // before the server, so the server (and its callbacks) goes first.
  std::unique_ptr<common::NatsClient> nats;
  std::atomic<common::NatsClient*> connected{nullptr};
  std::mutex read_mu;    // one reading at a time, even with concurrent scrapes
  bool failing = false;  // guarded by read_mu: log when readings start and stop failing
  std::map<std::string, DlqReasonTally> tallies;  // guarded by read_mu: --dlq-reasons
  bool dlq_failing = false;                       // guarded by read_mu
  auto read_once = [&]() {
    common::NatsClient* n = connected.load();
    if (n == nullptr) return;  // not connected yet: nothing read, no failure counted
    std::lock_guard lock(read_mu);
    auto start = std::chrono::steady_clock::now();
    auto readings = ReadStreams(*n, options.only, common::Millis(0));
    double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!readings) {
      if (!failing) spdlog::warn("cannot read JetStream: {}", readings.error().message);
      failing = true;
      gauges.RecordFailure();
      return;
    }
    if (failing) spdlog::info("reading JetStream again");
    failing = false;
    gauges.Record(*readings, took);
    if (options.dlq_reasons) CountDlqReasons(*n, *readings, options, tallies, gauges, dlq_failing);
  };
  const bool per_scrape = options.interval.count() == 0;
  if (per_scrape) registry.AddCollector(read_once);

  // Healthy while readings are fresh: three missed periods (or 30 s, whichever is longer) mean
  // JetStream stopped answering us. Per scrape there is no period: the connection decides.
  const auto stale_after_ns = std::max<int64_t>(3 * options.interval.count(), 30'000) * 1'000'000;
  common::MetricsServer server(registry, [&]() {
    common::Health h;
    if (per_scrape) {
      common::NatsClient* n = connected.load();
      h.ok = n != nullptr && n->Connected();
      h.detail = std::string("nats: ") + (h.ok ? "connected" : "not connected") + "\n";
      return h;
    }
    int64_t last = gauges.last_read_ns();
    h.ok = last > 0 && common::NowUnixNs() - last < stale_after_ns;
    h.detail = last > 0 ? "last reading " + common::FormatRfc3339(last) + "\n" : "no reading yet\n";
    return h;
  });
  if (auto st = server.Start(options.listen); !st) {
    spdlog::critical("--serve {}: {}", options.listen, st.error().message);
    return kExitUsage;
  }
  spdlog::info("serving JetStream stream and consumer gauges on {} ({})", options.listen,
               per_scrape ? "read on every scrape"
                          : "read every " + common::FormatDuration(options.interval));

  common::NatsClient::Options o;
  o.client_name = "platformctl-exporter@" + common.instance;
  o.retry_until_stopped = &stop;  // a long-running service: wait for NATS like the others do
  auto client = common::NatsClient::Connect(common, o);
  if (!client) {
    if (stop.stopping()) return kExitOk;             // SIGTERM before NATS answered
    spdlog::critical("{}", client.error().message);  // a TLS file nats.c cannot load
    return kExitUsage;
  }
  nats = std::move(*client);
  connected = nats.get();
  common::NatsStopGuard nats_stop(*nats, stop);
  if (per_scrape) {
    while (!stop.WaitFor(std::chrono::seconds(1))) {
    }
  } else {
    do {
      read_once();
    } while (!stop.WaitFor(options.interval));
  }
  server.Stop();
  return kExitOk;
}

}  // namespace platformctl
