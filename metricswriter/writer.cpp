// The Writer (writer.h): start-up, the store thread, health.
#include "metricswriter/writer.h"

#include <spdlog/spdlog.h>

#include <array>
#include <random>
#include <thread>

#include "common/timefmt.h"

namespace mw {
namespace {

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

Writer::Writer(WriterOptions options, common::NatsClient& nats, common::metrics::Registry& registry,
               common::StopFlag& stop)
    : options_(std::move(options)),
      nats_(nats),
      stop_(stop),
      metrics_(registry),
      budget_(options_.max_bytes_in_flight) {
  for (size_t i = 0; i < std::max<size_t>(options_.connections, 1); ++i) {
    stores_.push_back(std::make_unique<Store>(options_.store));
  }
}

Writer::~Writer() = default;

common::Health Writer::health() const {
  common::Health h;
  bool nats_ok = nats_.Connected();
  bool db_ok = db_ok_.load();
  h.ok = nats_ok && db_ok;
  h.detail = std::string("nats: ") + (nats_ok ? "connected" : "disconnected") + "\n" +
             "database: " + (db_ok ? "ok" : "unavailable (batches held)") + "\n";
  return h;
}

common::Status Writer::Run() {
  // The schema first: nothing is fetched before the database is there and migrated.
  Backoff backoff(options_.retry_base, options_.retry_max);
  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<double> rand01(0, 1);
  while (!stop_.stopping()) {
    auto s = stores_[0]->Connect();
    if (s.ok()) break;
    if (backoff.attempts() % 10 == 0) {
      spdlog::warn("database not ready, retrying: {}", s.error().message);
    }
    stop_.WaitFor(backoff.Next(rand01(rng)));
  }
  if (stop_.stopping()) return common::Status::Ok();
  db_ok_ = true;
  metrics_.database_up.Set(1);

  std::unique_ptr<common::PullConsumer> consumer;
  backoff.Reset();
  while (!stop_.stopping()) {
    auto c = common::PullConsumer::Bind(nats_, options_.consumer);
    if (c.ok()) {
      consumer = std::move(*c);
      break;
    }
    if (backoff.attempts() % 10 == 0) {
      spdlog::warn("cannot bind consumer {} on {}, retrying: {}", options_.consumer.durable,
                   options_.consumer.stream, c.error().message);
    }
    stop_.WaitFor(backoff.Next(rand01(rng)));
  }
  if (!consumer) return common::Status::Ok();
  spdlog::info("consuming {} as {}", options_.consumer.stream, options_.consumer.durable);
  crash_guard_ = common::CrashGuard::Bind(nats_, options_.consumer.durable, options_.instance);
  std::vector<std::thread> store_threads;
  for (size_t i = 0; i < stores_.size(); ++i) {
    store_threads.emplace_back([this, i] { StoreLoop(i); });
  }
  IntakeLoop(*consumer);
  for (auto& t : store_threads) t.join();
  spdlog::info("stopped");
  return common::Status::Ok();
}

void Writer::StoreLoop(size_t index) {
  Store& store = *stores_[index];
  auto next_expire = Clock::now();
  while (true) {
    if (index == 0 && db_ok_ && Clock::now() >= next_expire) {
      auto dropped = store.Expire(common::NowUnixNs());
      if (dropped.ok()) {
        if (*dropped > 0) spdlog::info("retention: dropped {} day partitions", *dropped);
        next_expire = Clock::now() + options_.expire_every;
      } else {
        spdlog::warn("retention pass failed, retrying in a minute: {}", dropped.error().message);
        next_expire = Clock::now() + std::chrono::minutes(1);
      }
    }
    Group g;
    {
      std::unique_lock lk(mu_);
      cv_.wait_for(lk, Millis(1000), [&] { return !queue_.empty() || intake_done_; });
      if (queue_.empty()) {
        if (intake_done_) break;
        continue;
      }
      g = std::move(queue_.front());
      queue_.pop_front();
    }
    cv_.notify_all();  // room for the intake thread
    if (stop_.stopping() && !db_ok_) {
      NakRest(g);  // stopping with the database down: give the batches back now
      continue;
    }
    StoreGroup(store, g);
  }
}

void Writer::StoreGroup(Store& store, Group& g) {
  metrics_.group_batches.Observe(static_cast<double>(g.batches.size()));
  Isolator iso(g.batches.size());
  Backoff backoff(options_.retry_base, options_.retry_max);
  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<double> rand01(0, 1);
  bool failing = false;
  Clock::time_point failing_since{};
  Clock::time_point last_log{};
  std::string last_error;
  Clock::time_point last_keepalive = Clock::now();
  std::span<const PendingBatch> all(g.batches);
  while (!iso.Done()) {
    Isolator::Range r = iso.Current();
    auto t0 = Clock::now();
    auto res = store.Write(all.subspan(r.begin, r.size()), common::NowUnixNs());
    if (res.ok()) {
      metrics_.transaction_seconds.Observe(Seconds(Clock::now() - t0));
      Finished(store, g, r.begin, r.end, *res);
      iso.Stored();
      backoff.Reset();
      if (failing) {
        spdlog::info("database available again after {:.1f} s",
                     Seconds(Clock::now() - failing_since));
        failing = false;
      }
      db_ok_ = true;
      metrics_.database_up.Set(1);
      continue;
    }
    const common::Error& e = res.error();
    if (e.kind == common::ErrorKind::kInvalid) {
      // The database refused the content. Split until the culprit stands alone; its
      // neighbours are stored by the next attempts.
      if (iso.Rejected()) {
        DeadLetter(g.messages[r.begin], "database rejected this batch: " + e.message, "",
                   "db_rejected");
        g.done[r.begin] = true;
        Release(1, g.batches[r.begin].charge);
      }
      continue;
    }
    // Unavailable (down, restarting, read-only, full, ...): hold everything and retry.
    db_ok_ = false;
    metrics_.database_up.Set(0);
    metrics_.database_retries.With({common::ErrorKindName(e.kind)}).Inc();
    if (!failing) {
      failing = true;
      failing_since = Clock::now();
    }
    if (Clock::now() - last_log > std::chrono::seconds(30) || e.message != last_error) {
      last_error = e.message;
      spdlog::warn("database unavailable for {:.0f} s, holding {} batches and retrying: {}",
                   Seconds(Clock::now() - failing_since), held_.load(), e.message);
      last_log = Clock::now();
    }
    auto until = Clock::now() + backoff.Next(rand01(rng));
    while (Clock::now() < until && !stop_.stopping()) {
      KeepAlive(g, &last_keepalive);
      stop_.WaitFor(
          std::min(std::chrono::duration_cast<Millis>(until - Clock::now()), Millis(1000)));
    }
    if (stop_.stopping()) {
      NakRest(g);
      return;
    }
  }
}

void Writer::KeepAlive(Group& g, Clock::time_point* last) {
  // Well within the ack wait: a held batch must never be redelivered to someone else.
  if (Clock::now() - *last < options_.consumer.ack_wait / 3) return;
  *last = Clock::now();
  for (size_t i = 0; i < g.messages.size(); ++i) {
    if (!g.done[i]) (void)g.messages[i].InProgress();
  }
  std::lock_guard lk(mu_);
  for (auto& q : queue_) {
    for (auto& m : q.messages) (void)m.InProgress();
  }
}

void Writer::Finished(Store& store, Group& g, size_t begin, size_t end, const WriteOutcome& out) {
  const int64_t now_ns = common::NowUnixNs();
  size_t stored = 0;
  int64_t bytes = 0;
  // Summed here and added once per type: a labelled child's lookup takes a lock.
  std::array<size_t, kMetricTypes> points{};
  for (size_t i = begin; i < end; ++i) {
    common::Message& msg = g.messages[i];
    const Batch& b = g.batches[i].batch;
    if (out.stored[i - begin]) {
      ++stored;
      for (const auto& p : b.numbers) {
        ++points[static_cast<size_t>(b.metrics[b.series[p.series].metric].type)];
      }
      points[static_cast<size_t>(MetricType::kHistogram)] += b.histograms.size();
      points[static_cast<size_t>(MetricType::kExpHistogram)] += b.exp_histograms.size();
      points[static_cast<size_t>(MetricType::kSummary)] += b.summaries.size();
      if (b.nul_replacements > 0) {
        metrics_.nul_replacements.Inc(static_cast<double>(b.nul_replacements));
      }
      if (msg.timestamp_ns() > 0) {
        metrics_.batch_lag_seconds.Observe(static_cast<double>(now_ns - msg.timestamp_ns()) / 1e9);
      }
    } else {
      metrics_.duplicates.Inc();
      spdlog::debug("batch {} of {} was stored before: sequence {}, delivery {}",
                    g.batches[i].batch_id, g.batches[i].tenant, msg.stream_seq(),
                    msg.num_delivered());
    }
    // After the commit only. A lost ack means a redelivery, which the batch id turns away.
    if (auto s = msg.Ack(); !s.ok()) {
      spdlog::debug("ack of sequence {} failed: {}", msg.stream_seq(), s.error().message);
    }
    g.done[i] = true;
    bytes += g.batches[i].charge;
  }
  Release(end - begin, bytes);
  for (size_t t = 0; t < kMetricTypes; ++t) {
    if (points[t] > 0)
      metrics_.Points(static_cast<MetricType>(t)).Inc(static_cast<double>(points[t]));
  }
  if (stored > 0) {
    metrics_.batches_stored.Inc(static_cast<double>(stored));
    metrics_.last_stored.Set(static_cast<double>(now_ns) / 1e9);
  }
  if (out.series_created > 0) metrics_.series_created.Inc(static_cast<double>(out.series_created));
  metrics_.series_cached.Set(static_cast<double>(store.series_cached()));
}

void Writer::NakRest(Group& g) {
  size_t n = 0;
  int64_t bytes = 0;
  for (size_t i = 0; i < g.messages.size(); ++i) {
    if (g.done[i]) continue;
    (void)g.messages[i].Nak(Millis(0));
    g.done[i] = true;
    ++n;
    bytes += g.batches[i].charge;
  }
  Release(n, bytes);
  if (n > 0) spdlog::info("stopping with the database unavailable: {} batches handed back", n);
}

void Writer::Release(size_t n, int64_t bytes) {
  metrics_.held_batches.Set(static_cast<double>(held_ -= static_cast<int64_t>(n)));
  metrics_.held_bytes.Set(static_cast<double>(held_bytes_ -= bytes));
  // The intake may have room again. Under the lock: it evaluates its wait under it, so the
  // wake-up cannot fall between its check and its wait.
  { std::lock_guard lk(mu_); }
  cv_.notify_all();
}

}  // namespace mw
