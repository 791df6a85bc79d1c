// The metricswriter service: drains API_METRICS into PostgreSQL (docs/contract.md §5).
//
// Threads, so decoding overlaps the database's work and two connections write at once (one
// PostgreSQL backend is the limit of every bulk load):
//  - intake: fetches from the durable pull consumer, checks id, tenant and content type,
//    decodes, and either dead-letters the message (API_DLQ, then ack) or adds it to a group;
//    a full or lingering group is handed to the store thread (at most `queued_groups` wait);
//    it fetches by bytes as well as by count and decodes only what the byte budget has room
//    for (ByteBudget: at most `max_bytes_in_flight` held, as received plus decoded);
//  - store (`connections` of them, each with its own Store): writes a group in one transaction
//  (Store::Write), acks its messages after the
//    commit, isolates a batch the database rejects for its content and dead-letters it alone,
//    and holds everything (in-progress acks keep it ours) while the database is unavailable,
//    retrying with backoff without limit.
// Stop (SIGTERM): intake stops fetching; the store thread finishes the transaction under way
// and the groups already decoded (naking them instead if the database is down); Run returns.
// Ownership: borrows the NatsClient, Registry and StopSignal (all outlive Run()).
// Thread-safety: Run() once, from the main thread; health() from any thread.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/crash_guard_kv.h"
#include "common/http_server.h"
#include "common/metrics.h"
#include "common/nats_client.h"
#include "common/nats_stream.h"
#include "common/stop_signal.h"
#include "metricswriter/byte_budget.h"
#include "metricswriter/decisions.h"
#include "metricswriter/otlp_json.h"
#include "metricswriter/otlp_proto.h"
#include "metricswriter/store.h"
#include "metricswriter/writer_metrics.h"

namespace mw {

struct WriterOptions {
  common::ConsumerSpec consumer;  // durable "metricswriter" on API_METRICS
  size_t group_batches = 500;     // batches per transaction, at most
  size_t group_points = 50'000;   // points per transaction, at most
  Millis group_linger{100};       // a partial group waits at most this for more
  size_t connections = 2;         // store threads, one PostgreSQL connection each
  size_t queued_groups = 2;       // decoded groups waiting for a store thread
  Millis retry_base{200};         // database retry backoff
  Millis retry_max{10'000};
  Millis expire_every{std::chrono::hours(1)};
  int64_t max_bytes_in_flight = int64_t{64} << 20;  // see ByteBudget
  Millis too_large_retry{60'000};   // a dead letter refused for its size is tried again after
  Millis unavailable_retry{5'000};  // a dead letter that could not be published otherwise
  Store::Options store;
  std::string instance;  // INSTANCE_NAME (common configuration), for the crash-loop guard
};

// A group of decoded batches and their messages (same index), on its way to the database.
struct Group {
  std::vector<common::Message> messages;
  std::vector<PendingBatch> batches;
  std::vector<bool> done;  // acked, dead-lettered or naked: no longer ours to keep alive
  size_t points = 0;
  Clock::time_point first;
};

class Writer {
 public:
  Writer(WriterOptions options, common::NatsClient& nats, common::metrics::Registry& registry,
         common::StopFlag& stop);
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  // Binds the consumer and runs both loops until a stop is requested. Error only when the
  // consumer cannot be bound.
  common::Status Run();
  common::Health health() const;

 private:
  // intake thread (writer_intake.cpp)
  void IntakeLoop(common::PullConsumer& consumer);
  bool Admit(common::Message& msg, PendingBatch* out);  // false: dead-lettered or naked
  void Take(common::Message msg, Group* g);             // decodes a fetched message into g
  bool Waiting(const Group& g) const;  // nothing to do until a release, a stop or the linger
  void KeepRawAlive(Clock::time_point* last);
  void HandBackRaw();  // at a stop: messages fetched and not decoded go back to the stream
  // store thread (writer.cpp)
  void StoreLoop(size_t index);
  void StoreGroup(Store& store, Group& group);
  void KeepAlive(Group& group, Clock::time_point* last);
  void Finished(Store& store, Group& group, size_t begin, size_t end, const WriteOutcome& out);
  void NakRest(Group& group);             // at a stop while the database is down
  void Release(size_t n, int64_t bytes);  // n batches (charged `bytes`) are no longer held
  // either thread
  void DeadLetter(common::Message& msg, const std::string& reason, const std::string& detail,
                  const std::string& label);
  void DeadLetterFailed(common::Message& msg, const common::Error& e);  // counts, naks, logs

  WriterOptions options_;
  common::NatsClient& nats_;
  common::StopFlag& stop_;
  WriterMetrics metrics_;
  std::vector<std::unique_ptr<Store>> stores_;       // stores_[i]: store thread i only
  JsonDecoder json_;                                 // intake thread only
  ProtoDecoder proto_;                               // intake thread only
  std::string scratch_;                              // intake thread only
  ByteBudget budget_;                                // intake thread only
  std::unique_ptr<common::CrashGuard> crash_guard_;  // intake thread only (bound in Run)
  std::deque<common::Message> raw_;  // intake thread only: fetched, waiting for budget to decode

  std::mutex mu_;  // guards queue_ and intake_done_
  std::condition_variable cv_;
  std::deque<Group> queue_;
  bool intake_done_ = false;

  std::atomic<bool> db_ok_{false};
  std::atomic<int64_t> held_{0};
  std::atomic<int64_t> held_bytes_{0};

  std::mutex dlq_mu_;  // guards the two below
  // Per cause (too_large, unavailable): when the failure was logged at warn level, how many
  // failed since (the rest go to debug; a reminder at most hourly).
  std::array<Clock::time_point, 2> dlq_logged_{};
  std::array<uint64_t, 2> dlq_failed_since_log_{};
};

}  // namespace mw
