// Private to the replayer's shell (engine.cpp, engine_workers.cpp): what executes the engine
// core's commands. Nothing else includes this file.
//
// Threads: the engine thread (Engine::Run) owns the core, the HTTP pool and every message; it
// alone touches them. The fetch thread and the lookup thread only carry out one request at a
// time that the engine thread hands them and put the answer in the inbox; nats.c's threads put
// publish completions there too. Everything crossing threads goes through `inbox` (one mutex).
#pragma once

#include <memory>
#include <mutex>
#include <unordered_map>

#include "common/crash_guard_kv.h"
#include "common/log.h"
#include "common/nats_async.h"
#include "common/nats_kv.h"
#include "common/nats_stream.h"
#include "replayer/engine.h"
#include "replayer/engine_core.h"
#include "replayer/engine_workers.h"
#include "replayer/http_pool.h"

namespace replayer {

// HTTP tags: a check's requests carry this bit (and the check id, and the part in bit 0); a
// send's tag is its send id.
constexpr uint64_t kCheckTag = 1ULL << 63;

// The engine thread's state. Two members are touched by other threads, and both are safe for
// it: `inbox` (an Inbox) and `http.Wakeup()`.
struct Engine::State {
  State(common::NatsClient& n, ReplayerConfig c, ReplayerMetrics& mm);

  common::NatsClient& nats;
  ReplayerConfig cfg;
  ReplayerMetrics& m;
  EngineCore core;
  std::vector<std::string> send_urls, batch_urls;
  std::vector<common::metrics::Histogram*> send_seconds;  // per process, looked up once
  std::unique_ptr<common::PullConsumer> consumer;
  std::unique_ptr<common::KvBucket> stored_ids;
  std::unique_ptr<common::KvBucket> visit_bucket;
  std::unique_ptr<common::CrashGuard> crash_guard;  // used by the fetch thread only
  // Guard records and acks of stored events: many small writes, so a connection of their own
  // that coalesces them (send_asap off: nats.c's flusher writes about once a millisecond)
  // instead of one write each on the shared connection. Outlives the publisher that uses it.
  std::unique_ptr<common::NatsClient> acks_nats;
  std::unique_ptr<common::AsyncPublisher> publisher;  // reset first in ~Engine: see there
  HttpPool http;
  Inbox inbox;
  std::unique_ptr<Workers> workers;  // while Run() runs

  std::unordered_map<Ref, common::Message> messages;
  Output out;
  std::vector<common::Message> freed;  // released together, in batches (Run())
  TimePoint last_free{};
  std::vector<HttpResponse> responses;  // what one Poll() finished; kept for its capacity
  Inbox::Batch inbox_batch;             // what DrainInbox() took; kept for its capacity
  TimePoint wake_at{};
  std::vector<PubDone> failed_now;  // publishes refused before they left: fed back next turn
  // Warnings that repeat for every message while NATS is away (hundreds a second): the first
  // few, then one per 10 s that counts the rest.
  common::LogLimiter fetch_warn{1, milliseconds(10'000)}, lookup_warn{1, milliseconds(10'000)};
  common::LogLimiter guard_warn{3, milliseconds(10'000)};
  std::mutex visit_warn_mu;  // the publisher's completions log from a nats.c thread
  common::LogLimiter visit_warn{3, milliseconds(10'000)};
  void WarnVisitNotSaved(const std::string& why);

  // engine.cpp
  void Execute();
  void ExecuteCommand(Command& c);
  void DrainInbox();
  void OnHttp(HttpResponse r);
  void Publish(const common::OutMessage& msg, uint64_t tag);
  void UpdateGauges();
  Engine::StatusSink status_sink;
  std::map<std::string, int64_t> status_said;
  // engine_observe.cpp
  void Observe(const Note& n);
};

}  // namespace replayer
