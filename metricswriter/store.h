// Writes groups of decoded batches to PostgreSQL, each batch exactly once.
//
// Write() resolves series ids (an in-memory cache in front of metrics.series), makes sure the
// day partitions exist, then in ONE transaction inserts the batch ids (ON CONFLICT DO NOTHING
// RETURNING: a batch id already there is a redelivery or a replay and adds nothing) and COPYs the
// points of the batches that were new. Nothing is acknowledged here: the caller acks after
// Write() returned, i.e. after the commit.
// Errors carry a kind from the SQLSTATE: invalid = the database rejected the data (isolate the
// batch), anything else = the database is unavailable or unwell (hold and retry). A broken
// connection is dropped and the next call reconnects.
// Ownership: the Store owns its connection, caches and encoder. Thread-safety: one thread (the
// writer's store thread) uses a Store.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/pg_conn.h"
#include "common/result.h"
#include "metricswriter/copy_encoder.h"
#include "metricswriter/fingerprint.h"
#include "metricswriter/otlp_model.h"

namespace mw {

// A decoded batch waiting to be stored.
struct PendingBatch {
  std::string tenant;
  std::string batch_id;  // the message id without replay suffixes
  uint64_t stream_seq = 0;
  Batch batch;
  std::vector<Fingerprint> fingerprints;  // one per batch.series
  int64_t charge = 0;  // bytes charged against the writer's budget (message and decoded batch)
};

struct WriteOutcome {
  std::vector<bool> stored;  // per batch: true = stored now, false = already there (duplicate)
  std::array<size_t, kTables> rows{};  // points written per table
  size_t series_created = 0;
};

// The most text one statement creating series carries (decisions.h, SplitByBytes).
inline constexpr size_t kSeriesStatementBytes = 4 << 20;

class Store {
 public:
  struct Options {
    std::string database_url;
    int retention_days = 30;            // point partitions older than this are dropped
    int batch_id_retention_days = 35;   // batch ids kept (must exceed API_DLQ's max age)
    size_t series_cache_max = 200'000;  // ids cached; the cache is emptied when full
    std::chrono::milliseconds statement_timeout{60'000};
  };

  explicit Store(Options options);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // Connects and applies migrations when not connected. Retryable error: try again later.
  common::Status Connect();
  bool connected() const { return conn_ != nullptr; }

  // Stores batches (all of them or none). now_ns: the wall clock, for the partition window.
  common::Result<WriteOutcome> Write(std::span<const PendingBatch> batches, int64_t now_ns);

  // Drops point partitions past the retention and forgets old batch ids. Returns tables dropped.
  common::Result<int> Expire(int64_t now_ns);

  size_t series_cached() const { return series_.size(); }

 private:
  common::Status Fail(const common::Error& e);  // drops a broken connection, returns e
  common::Status ResolveSeries(std::span<const PendingBatch> batches,
                               std::vector<std::vector<int64_t>>* ids, size_t* created);
  // INSERTs the series `todo` lists (fingerprint, (batch, series)) and caches their ids.
  common::Status InsertSeries(
      std::span<const PendingBatch> batches,
      std::span<const std::pair<Fingerprint, std::pair<size_t, size_t>>> todo);
  common::Status EnsureDays(std::span<const PendingBatch> batches, int64_t now_ns);

  Options options_;
  std::unique_ptr<common::pg::PgConn> conn_;
  std::unordered_map<Fingerprint, int64_t, FingerprintHash> series_;
  std::set<int64_t> days_;  // day numbers (unix days) whose partitions exist
  CopyEncoder encoder_;
};

// "YYYY-MM-DD" of a unix day number.
std::string DayString(int64_t unix_day);

}  // namespace mw
