// The replayer engine: drains WEB_EVENTS into Umami (docs/replayer.md). This is the shell around
// the engine core (engine_core.h), which makes every decision; the shell executes its commands
// against NATS and Umami and feeds the outcomes back.
//
// Threads: Run() is called on one thread (the engine thread) and returns after a stop request
// once everything held is finished or released. It starts a fetch thread (fetch and parse) and a
// lookup thread (KV reads), which carry out the core's requests and answer through an inbox;
// NATS completions (async publishes) arrive on nats.c threads and go through the same inbox.
// The core, the HTTP pool and every held message belong to the engine thread alone.
// Ownership: the engine borrows the NatsClient, the metrics and the stop signal; it owns the
// consumer, the KV handles, the HTTP pool and every held message.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/config.h"
#include "common/nats_client.h"
#include "common/nats_stream.h"
#include "common/result.h"
#include "common/stop_signal.h"
#include "replayer/replayer_metrics.h"

namespace replayer {

struct ReplayerConfig {
  std::vector<std::string> umami_urls;
  int workers = 128;  // concurrent sends, all processes together
  // Concurrent sends to one Umami process. More than it can serve only adds latency (and a
  // send that outlives its timeout may still be stored: a duplicate when retried).
  int sends_per_process = 32;
  int max_in_flight = 900;  // messages held
  // Bytes held: payload, headers and the parsed event (Delivery::bytes). At least 2 MiB: a
  // fetch asks for half the room, and never for less than max_message_bytes.
  int64_t max_bytes_in_flight = 64ll << 20;
  // The least room a fetch asks for; a bigger message (the server allows 8 MB) does not fit
  // the room and is fetched alone (engine_workers.cpp), the one message the budget may go over.
  int64_t max_message_bytes = 1ll << 20;
  common::Millis ack_wait{30'000};
  common::Millis send_timeout{30'000};
  common::Millis check_cache{3'000};
  int fetch_batch = 100;
  int batch_max = 20;    // events of one visitor in one POST /api/batch; 0: /api/send only
  std::string instance;  // INSTANCE_NAME (common configuration), for the crash-loop guard
};

ReplayerConfig ReadReplayerConfig(common::ConfigReader& r);
// The durable consumer on WEB_EVENTS the engine binds (created if absent; nats.c binds only an
// existing one with the same settings).
common::ConsumerSpec ConsumerSpecFor(const ReplayerConfig& cfg);

class Engine {
 public:
  Engine(common::NatsClient& nats, ReplayerConfig config, ReplayerMetrics& metrics);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Binds the consumer and the buckets. Start-up errors (no stream, no bucket) come back here.
  common::Status Start();
  // Runs until stop.stopping(), then finishes or releases what it holds.
  void Run(common::StopFlag& stop);
  // Called from Run's thread when what the engine says of its work changes (at most once a
  // second): visitors blocked behind a failing event and their sites, websites Umami does not
  // know. The service writes it into the lease (LeaseKeeper::SetStatus) for platformctl.
  using StatusSink = std::function<void(std::map<std::string, int64_t>)>;
  void OnStatus(StatusSink sink);

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace replayer
