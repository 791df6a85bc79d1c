// Private to the replayer engine: the state the engine thread owns, shared by engine.cpp,
// engine_send.cpp and intake.cpp. Not an interface: nothing outside the engine includes it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <queue>
#include <thread>
#include <unordered_map>

#include "common/nats_async.h"
#include "common/nats_kv.h"
#include "common/nats_stream.h"
#include "replayer/classifier.h"
#include "replayer/engine.h"
#include "replayer/event.h"
#include "replayer/http_pool.h"
#include "replayer/lanes.h"
#include "replayer/recent_seqs.h"
#include "replayer/visit_cache.h"

namespace replayer {
namespace engine_detail {
constexpr uint64_t kCheckTag = 1ULL << 63;
constexpr milliseconds kTick{100};
constexpr milliseconds kDownRecheck{2000};
constexpr milliseconds kDeadLetterRetry{5000};
// No answer to a WEB_DLQ publish by then (the publisher's own timeout is shorter): publish again.
constexpr milliseconds kDeadLetterAckWait{15'000};
constexpr milliseconds kGuardAckWait{10'000};
constexpr milliseconds kStopGrace{15'000};
// Finished stream sequences remembered for redeliveries the guard's read missed: far more than
// a few fetches' worth, which is the window they cover (see recent_seqs.h).
constexpr size_t kRecentFinished = 16384;

// kFinishing: stored, its guard record under way. kDeadLettering: its WEB_DLQ copy under way.
enum class Stage { kWaiting, kReady, kSending, kChecking, kBackoff, kFinishing, kDeadLettering };

struct Held {
  core::Message msg;
  WebEvent ev;
  std::string lane;
  Stage stage = Stage::kWaiting;
  int failures = 0;
  bool parked_write_fault = false;
  int process = -1;
  TimePoint next_at{};
  TimePoint touched{};
  std::string last_answer;  // "HTTP 500: <excerpt>" of the last failed send
  std::string dlq_reason;   // set while a dead-lettering waits for a retry
  std::string dlq_code;
};

struct Process {
  std::string url;
  std::string send_url;                              // url + "/api/send"
  core::metrics::Histogram* send_seconds = nullptr;  // this process's child, looked up once
  ProcessHealth health;
  WriteFaultWindow write_fault;
  int in_flight = 0;
  int answers = 0;  // of the two checks under way
  bool heartbeat_ok = false;
  bool probe_ok = false;
  TimePoint last_check_started{};
};

struct NewEvent {
  core::Message msg;
  WebEvent ev;
};

struct PubDone {
  uint64_t tag;
  core::Status status;
};

}  // namespace engine_detail

using namespace engine_detail;  // NOLINT: private header of one component

struct Engine::State {
  State(core::NatsClient& n, ReplayerConfig c, ReplayerMetrics& mm)
      : nats(n), cfg(std::move(c)), m(mm) {
    for (const auto& url : cfg.umami_urls) {
      Process p;
      p.url = url;
      p.send_url = url + "/api/send";
      p.send_seconds = &m.send_seconds.With({url});
      p.health = ProcessHealth(cfg.check_cache);
      processes.push_back(std::move(p));
    }
  }

  core::NatsClient& nats;
  ReplayerConfig cfg;
  ReplayerMetrics& m;
  std::unique_ptr<core::PullConsumer> consumer;
  std::unique_ptr<core::KvBucket> stored_ids;
  std::unique_ptr<core::KvBucket> visits;
  // Guard records and acks of stored events: many small writes, so a connection of their own
  // that coalesces them (send_asap off: nats.c's flusher writes about once a millisecond)
  // instead of one write each on the shared connection. Outlives the publisher that uses it.
  std::unique_ptr<core::NatsClient> acks_nats;
  std::unique_ptr<core::AsyncPublisher> publisher;  // reset first in ~Engine: see there
  HttpPool http;
  Lanes lanes;
  RecentSeqs finished{kRecentFinished};
  VisitCache visit_cache;
  std::vector<Process> processes;
  std::unordered_map<uint64_t, Held> held;
  std::deque<uint64_t> ready;
  std::priority_queue<std::pair<TimePoint, uint64_t>, std::vector<std::pair<TimePoint, uint64_t>>,
                      std::greater<>>
      timers;
  std::atomic<int> held_count{0};
  uint64_t next_id = 1;
  uint64_t ticks = 0;  // Tick() calls: the visit cache is swept every 60th

  std::mutex inbox_mu;
  std::vector<NewEvent> inbox_events;
  std::vector<PubDone> inbox_done;
  std::vector<NewEvent> drain_events;      // engine thread: DrainInbox's side of the swap
  std::vector<PubDone> drain_done;         // engine thread: same
  std::vector<core::Message> drain_acked;  // engine thread: freed together, see DrainInbox
  std::thread intake;
  std::atomic<bool> intake_stop{false};
  std::condition_variable room_cv;  // the engine frees room: the intake may fetch again

  // Intake thread.
  void IntakeLoop();
  void IntakeBatch(std::vector<core::Message> batch);
  void DeadLetterNow(core::Message& msg, const std::string& reason, const std::string& code);

  // Engine thread.
  void DrainInbox(TimePoint now);
  void Admit(NewEvent e, TimePoint now);
  void Tick(TimePoint now);
  void Dispatch(TimePoint now);
  int PickProcess() const;
  void Send(uint64_t id, Held& h, int p);
  void OnResponse(HttpResponse r, TimePoint now);
  void OnStored(uint64_t id, Held& h, const std::string& body, TimePoint now);
  void OnFailed(uint64_t id, Held& h, TimePoint now);
  void StartCheck(int p, TimePoint now);
  void OnCheck(const HttpResponse& r, TimePoint now);
  void Decide(uint64_t id, Held& h, bool passed, TimePoint now);
  // Publishes the WEB_DLQ copy without waiting (the engine thread must not block on NATS: it
  // keeps every held message alive); OnDeadLettered acks the origin once the copy is stored.
  void DeadLetter(uint64_t id, Held& h, const std::string& reason, const std::string& code,
                  TimePoint now);
  void OnDeadLettered(uint64_t id, Held& h, const core::Status& stored, TimePoint now);
  void Finish(uint64_t id, Held& h);  // acked or dead-lettered: forget it, free its lane
  void PublishGuard(uint64_t id, Held& h, TimePoint now);
  void MakeReady(uint64_t id, Held& h);
  void Backoff(uint64_t id, Held& h, TimePoint at);
  void WakeWriteFaultParked();
  // hand_back false (the lease was lost): drop the messages without a nak; they come back to
  // the next leader after the ack wait.
  void ReleaseAll(bool hand_back);
  void UpdateGauges();
};

}  // namespace replayer
