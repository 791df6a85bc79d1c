// Private to the replayer's shell (engine.cpp, engine_workers.cpp): what executes the engine
// core's commands. Nothing else includes this file.
//
// Threads: the engine thread (Engine::Run) owns the core, the HTTP pool and every message; it
// alone touches them. The fetch thread and the lookup thread only carry out one request at a
// time that the engine thread hands them and put the answer in the inbox; nats.c's threads put
// publish completions there too. Everything crossing threads goes through `inbox` (one mutex).
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

#include "common/nats_async.h"
#include "common/nats_kv.h"
#include "common/nats_stream.h"
#include "replayer/engine.h"
#include "replayer/engine_core.h"
#include "replayer/http_pool.h"

namespace replayer {
namespace shell_detail {

constexpr uint64_t kCheckTag = 1ULL << 63;  // HTTP tags: checks; sends are plain op ids
constexpr milliseconds kMaxWait{100};
constexpr core::Millis kFetchWait{500};

// Where a message fetched by the fetch thread waits for the engine thread.
struct Fetched {
  std::vector<core::Message> messages;
  std::vector<Delivery> deliveries;  // one per message, same order
  std::string error;
};

struct LookupJob {
  std::vector<GuardLookupCmd> guards;
  std::vector<VisitLookupCmd> visits;
};

struct GuardAnswer {
  uint64_t lookup_id;
  Lookup answer;
};

struct VisitAnswer {
  std::string lane;
  Lookup answer;
  std::string value;
};

struct PubDone {
  uint64_t tag;
  PubOutcome outcome;
};

// The inbox: filled by the worker threads and nats.c callbacks, emptied by the engine thread.
struct Inbox {
  std::mutex mu;
  std::vector<Fetched> fetched;
  std::vector<GuardAnswer> guards;
  std::vector<VisitAnswer> visits;
  std::vector<PubDone> published;
};

}  // namespace shell_detail

using namespace shell_detail;  // NOLINT: private header of one component

struct Engine::State {
  State(core::NatsClient& n, ReplayerConfig c, ReplayerMetrics& mm);

  core::NatsClient& nats;
  ReplayerConfig cfg;
  ReplayerMetrics& m;
  EngineCore core;
  std::vector<std::string> send_urls;
  std::vector<core::metrics::Histogram*> send_seconds;  // per process, looked up once
  std::unique_ptr<core::PullConsumer> consumer;
  std::unique_ptr<core::KvBucket> stored_ids;
  std::unique_ptr<core::KvBucket> visit_bucket;
  // Guard records and acks of stored events: many small writes, so a connection of their own
  // that coalesces them (send_asap off: nats.c's flusher writes about once a millisecond)
  // instead of one write each on the shared connection. Outlives the publisher that uses it.
  std::unique_ptr<core::NatsClient> acks_nats;
  std::unique_ptr<core::AsyncPublisher> publisher;  // reset first in ~Engine: see there
  HttpPool http;

  // Engine thread only.
  std::unordered_map<Ref, core::Message> messages;
  Output out;
  std::vector<core::Message> freed;  // released together: see Execute()
  TimePoint wake_at{};
  std::vector<PubDone> failed_now;  // publishes refused before they left: fed back next turn
  TimePoint last_fetch_warn{}, last_lookup_warn{};

  Inbox inbox;

  // The worker threads' requests (guarded by work_mu).
  std::mutex work_mu;
  std::condition_variable work_cv;
  std::optional<FetchCmd> fetch_request;
  std::deque<LookupJob> lookup_jobs;
  bool workers_stop = false;
  std::thread fetcher, looker;
  Ref next_ref = 0;  // fetch thread only: refs are numbered in fetch order

  // engine.cpp
  void Execute();
  void ExecuteCommand(Command& c);
  void Observe(const Note& n);
  void DrainInbox();
  void OnHttp(HttpResponse r);
  void Publish(const core::OutMessage& msg, uint64_t tag);
  void UpdateGauges();

  // engine_workers.cpp
  void StartWorkers();
  void StopWorkers();
  void FetchLoop();
  void LookupLoop();
};

}  // namespace replayer
