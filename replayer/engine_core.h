// The replayer's engine core: every decision of the drain from WEB_EVENTS into Umami, as a state
// machine without I/O (docs/replayer.md).
//
// Inputs are the methods below, each with the time; the core answers with commands and notes in
// an Output (core_io.h) that the caller takes with Take(). It owns no thread, socket or clock:
// the replayer's shell (engine.h) executes its commands against NATS and Umami, the simulator
// (tests/sim) against a simulated world. What it decides: which fetched messages are new, which
// were stored before (the duplicate guard), per-visitor order (one send at a time, in stream
// order), outage or poison after a failed send (health checks), write faults, when to retry,
// what goes to WEB_DLQ and why, when a message is acked, kept alive or released, and the
// in-flight budget (messages and bytes held).
// Not thread-safe: one thread calls every method. Owns every held event; Refs are the shell's.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "replayer/core_io.h"

namespace replayer {

struct CoreConfig {
  std::vector<std::string> processes;  // Umami processes, by name (their URLs); at least one
  int workers = 128;                   // concurrent sends, all processes together
  int sends_per_process = 32;
  int max_in_flight = 900;                   // messages held
  int64_t max_bytes_in_flight = 64ll << 20;  // bytes held
  int64_t max_message_bytes = 1ll << 20;     // the server's max payload: one fetch's floor
  int fetch_batch = 100;
  // Events of one visitor in one POST /api/batch where a process has it (Umami 3.x); below 2:
  // /api/send only.
  int batch_max = 20;
  milliseconds ack_wait{30'000};
  milliseconds send_timeout{30'000};
  milliseconds check_cache{3'000};
};

class EngineCore {
 public:
  explicit EngineCore(CoreConfig config);
  ~EngineCore();
  EngineCore(const EngineCore&) = delete;
  EngineCore& operator=(const EngineCore&) = delete;

  // The first input: health checks of every process (none takes sends before they pass), the
  // first fetch.
  void Start(TimePoint now);
  // The answer to a FetchCmd: the batch (empty on a timeout); `error` set when the fetch failed.
  void OnFetched(std::vector<Delivery> batch, const std::string& error, TimePoint now);
  void OnGuardAnswer(uint64_t lookup_id, Lookup answer, TimePoint now);
  // `value`: the KV value when kFound.
  void OnVisitAnswer(const std::string& lane, Lookup answer, const std::string& value,
                     TimePoint now);
  void OnSendAnswer(uint64_t send_id, const HttpAnswer& answer, TimePoint now);
  void OnCheckAnswer(uint64_t check_id, CheckPart part, const HttpAnswer& answer, TimePoint now);
  void OnPublished(uint64_t pub_id, const PubOutcome& outcome, TimePoint now);
  // Called at or after the time of the earliest ArmTimerCmd (and at any other time: harmless).
  void OnTimer(TimePoint now);
  // SIGTERM: fetch nothing more, let the sends and publishes under way finish (15 s at most),
  // then hand every held message back (nak).
  void OnStop(TimePoint now);
  // The lease is lost: as OnStop, but held messages are dropped without a nak: they belong to
  // the next leader, which a nak could reach while it holds the same message.
  void OnLeadershipLost(TimePoint now);
  // After OnStop or OnLeadershipLost: nothing is held or under way any more.
  bool Done() const;

  // What the inputs since the last Take() produced; `out` is cleared first.
  void Take(Output& out);

  // For gauges and tests.
  int held() const;
  int64_t held_bytes() const;
  int sends_in_flight() const;
  size_t lanes_active() const;
  size_t lanes_blocked() const;
  // Websites Umami answered "not found" for, whose events go to WEB_DLQ unsent for now.
  size_t sites_unknown() const;
  size_t lanes_blocked_sites() const;  // the sites of lanes_blocked()'s visitors
  bool ProcessUp(int process) const;
  bool ProcessWriteFault(int process) const;
  bool Holds(uint64_t stream_seq) const;  // a message of this sequence is held (any stage)
  // Entries in the timer heap, stale ones included: at most max(1024, 2 x held) after any input.
  size_t timers() const;
  // Per-visitor events waiting behind the head (the simulator checks the 64-event cap).
  size_t LaneWaiting(const std::string& lane) const;
  bool LaneFailing(const std::string& lane) const;
  // Checks the core's own bookkeeping (counts, stages, indexes); returns what is wrong, or "".
  // O(held): for tests and the simulator.
  std::string SelfCheck() const;
  // One line: held events per stage, sends, lanes, processes (for a failing run's report).
  std::string Summary() const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace replayer
