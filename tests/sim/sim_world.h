// The replayer's simulated world (docs/simulation.md): a WEB_EVENTS work queue with ack waits,
// redeliveries, max ack pending and in-progress acks; the KV buckets of the duplicate guard and
// the visit state; WEB_DLQ; N Umami processes answering as Umami 2.10.0 or 3.1.0 would, through
// faults (down, hung, slow, database down, read-only, half-writing, odd replies); replayer
// instances (an EngineCore each) that crash, restart, lose the lease and take over. Time is
// simulated: a run of ten minutes takes milliseconds. Everything that happens is in the ledger,
// and the invariants are checked as it happens.
// Not thread-safe: one World per scenario, on one thread.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <queue>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "replayer/engine_core.h"
#include "tests/sim/sim_rng.h"

namespace sim {

struct UmamiAnswer;
using replayer::Clock;
using replayer::TimePoint;
using std::chrono::milliseconds;

enum class Version { k2_10, k3_1 };

// What an event is, and so what Umami (healthy) does with it.
enum class Kind {
  kGood,          // stored
  kBot,           // answered 200, nothing stored
  kValidation,    // event name over 50 characters: 400 in both, nothing stored
  kIdentify,      // 2.10: 500 (its bug); 3.1: stored as session data
  kLongUrl,       // 2.10: 400; 3.1: stored (cut to 500 characters)
  kHalfWrite,     // a data number numeric(19,4) cannot hold: must never be sent
  kMalformed,     // not an event at all: dead-lettered at once
  kHeaderPoison,  // a user agent with CR LF: dead-lettered at once, never sent
  kReaderKiller,  // kills the instance that parses it (a decoder bug): the crash-loop guard
                  // (common/crash_guard.h) dead-letters it at its fourth delivery, never sent
  kUnknownSite,   // of a website Umami does not hold: "Website not found" (2.10: 403, 3.1: 400);
                  // to WEB_DLQ at its first answer, the site's next events unsent for a while
};
const char* KindName(Kind k);

enum class Fault {
  kDown,       // connection refused
  kHung,       // accepts and never answers (the transport times out); may store later
  kSlow,       // answers after seconds, maybe after the send timeout
  kDbDown,     // the probe fails: an outage
  kReadOnly,   // the probe passes, every write fails: a write fault
  kHalfWrite,  // stores the event row, then answers 500
  kOddReply,   // stores, then answers 200 with a 70 KB page instead of a token
  kKvDown,     // KV reads and writes fail (all processes: process = -1)
  kDlqDown,    // WEB_DLQ refuses publishes
  kFetchDown,  // fetches fail
  kAcksLost,   // half the in-progress acks are lost: JetStream redelivers a message its holder
               // still works on, to that holder (the engine must adopt it, never send it twice)
  kNoBatch,    // answers POST /api/batch 404 (a downgrade to a Umami without it); 2.10 always
  kMarkerDeleteFails,  // the crash-loop guard's marker deletes fail (KV timeouts in a partition):
                       // the markers stay (Scenario::own_marker)
};
const char* FaultName(Fault f);

struct FaultSpan {
  Fault fault;
  int process = -1;  // -1: every process (or not a process fault)
  TimePoint start, end;
};

enum class InstanceAction { kCrash, kLeaseLoss, kStop };
struct InstanceEvent {
  TimePoint at;
  InstanceAction action;
};

struct Scenario {
  uint64_t seed = 0;
  Version version = Version::k3_1;
  int processes = 1;
  int visitors = 100;
  int sites = 1;
  double rate = 10;  // events per second
  bool bursts = false;
  bool backlog_times = false;  // accepted_at jumps: hours of a visitor's traffic in minutes
  double poison = 0.01;        // share of events that are not good
  // Event 101 kills the reader that parses it (Kind::kReaderKiller); and readers are killed from
  // outside (kill -9, a lost node) inside the marked window of good redeliveries (chance 0.05,
  // once per event, at most 6 a scenario): one stopped reader must not dead-letter them.
  bool reader_killer = false;
  bool unknown_site = false;  // every tenth visitor's events are for a website Umami does not
                              // hold (Kind::kUnknownSite)
  // The crash-loop guard's own markers (common/crash_guard.h, found by partition (c) on
  // nats-server 2.15.1): marker deletes fail for a while (Fault::kMarkerDeleteFails); the
  // leader loses its lease just after it read redeliveries under markers it could not delete,
  // and the same process takes the lease back (the lease goes to the instance that led last),
  // so the events come back to it with its own markers still there. None may be dead-lettered.
  bool own_marker = false;
  std::vector<FaultSpan> faults;
  std::vector<InstanceEvent> instance_events;
  replayer::CoreConfig core;
  milliseconds traffic{600'000};
  milliseconds lease_ttl{15'000};
  std::string Describe() const;
};

// Generated from the seed alone; `minutes` of traffic.
Scenario MakeScenario(uint64_t seed, int minutes);

struct EventRecord {
  Kind kind = Kind::kGood;
  int visitor = 0;
  int site = 0;
  int64_t accepted_ms = 0;
  std::string lane;
  // Outcome, as it happens.
  int rows = 0;             // rows Umami wrote for it (of any send)
  int ok_rows = 0;          // rows whose 2xx answer reached a live instance
  int dropped = 0;          // bot answers
  int dlq = 0;              // WEB_DLQ copies
  int excuses = 0;          // crashes or lease losses while its send or guard record was under way
  int dlq_answer_lost = 0;  // WEB_DLQ stored its copy but the answer was lost: the origin may
                            // come back and be stored too (a replay then finds its guard)
  int sends = 0;
  std::string dlq_reason;
};

struct Stats {
  int64_t published = 0, stored = 0, dead_lettered = 0, dropped = 0, duplicates = 0;
  int64_t excused_duplicates = 0, umami_duplicates = 0, sends = 0, checks = 0, steps = 0;
  int64_t invariant_checks = 0, redeliveries = 0, crashes = 0, takeovers = 0;
  int64_t good_dead_lettered_runbook = 0, visits_split = 0;
  int64_t batches = 0, batched = 0;  // batches sent, and the events in them
  int64_t unknown_site_events = 0, unknown_site_sends = 0;
  int64_t markers_left = 0;   // marker deletes that failed (Fault::kMarkerDeleteFails)
  int64_t own_markers = 0;    // redeliveries that found a marker of the process reading them
  int64_t window_kills = 0;   // readers killed from outside inside a good event's marked window
  int64_t stops_counted = 0;  // redeliveries read again under a marker counting a stopped reader
};

class World {
 public:
  explicit World(Scenario sc);
  ~World();
  // Runs traffic, heals, drains; returns "" or the first violation.
  std::string Run();
  const Stats& stats() const { return stats_; }
  std::string Trace() const;  // the last events, oldest first
  double simulated_minutes() const;

 private:
  friend struct Driver;
  struct Instance;
  struct Msg;
  struct UmamiProc;
  struct Fetch;

  // sim_world.cpp: time, stream, KV, DLQ.
  void At(TimePoint t, std::function<void()> fn);
  void Publish(int index);
  void FetchFor(int inst, replayer::FetchCmd cmd, uint64_t epoch);
  void AnswerFetch(int inst, uint64_t epoch, int max_messages, bool timed_out);
  void Deliver(uint64_t seq, TimePoint deadline_from);
  void Expire(uint64_t seq, uint64_t gen);
  void Ack(uint64_t seq);
  void Nak(uint64_t seq, milliseconds delay);
  void InProgress(uint64_t seq);
  void MakeDue(uint64_t seq);
  bool FaultActive(Fault f, int process) const;
  size_t Available() const;

  // sim_umami.cpp: the processes and the HTTP between.
  void HttpSend(int inst, uint64_t epoch, const replayer::SendCmd& cmd);
  void HttpBatch(int inst, uint64_t epoch, const replayer::SendCmd& cmd);
  // Delivers a send's (or batch's) answer at `t` to the instance, if it still waits for it.
  void AnswerSend(int inst, uint64_t epoch, uint64_t id, uint64_t sent_seq, TimePoint t,
                  UmamiAnswer a);
  // What Umami (healthy or in the faults now active) does with one event; decided at the send.
  UmamiAnswer Judge(const EventRecord& rec, int p, const std::string& tok);
  // The token Umami answers a stored event with (3.1: its visit's; 2.10: its session's).
  std::string StoredToken(const EventRecord& r, const std::string& tok) const;
  void HttpCheck(int inst, uint64_t epoch, const replayer::CheckCmd& cmd);
  void Store(int index, int process, bool ok_answer, const std::string& token, int inst,
             uint64_t epoch);
  void NoteWriteFailure(int process, const std::string& lane);
  bool RunbookCase() const;        // fewer than 3 visitors failed for a write fault in a minute
  milliseconds OutageFor() const;  // how long every process has failed its checks (0: not now)
  void DeadLetterStored(uint64_t seq, const std::string& reason);

  // sim_instance.cpp: the replayer instances.
  void Lead(int inst);
  void Execute(int inst);
  void Feed(int inst, uint64_t epoch, const std::function<void(replayer::EngineCore&)>& input);
  void CrashOrLose(int inst, InstanceAction action);
  // A marker's delete, or a retry of those that failed before (the instance's not_removed).
  void RemoveMarker(int inst, uint64_t seq);
  void LeaseTick();  // an alive instance without a term takes the free lease
  void CheckInstance(int inst);
  void Fail(const std::string& what);
  void Note(const char* what, uint64_t a = 0, uint64_t b = 0, int inst = -1);

  // sim_scenario.cpp: traffic, the end, the ledger.
  std::string MakeBody(int index, uint64_t seq) const;
  void ScheduleTraffic();
  void ScheduleFaults();
  bool Quiet() const;
  void FinalChecks();

  Scenario sc_;
  Rng rng_;
  TimePoint now_;
  TimePoint start_;
  int64_t wall_start_ms_ = 1'764'000'000'000;
  uint64_t order_ = 0;
  // The heap holds small entries; the actions themselves wait in slots that are reused.
  struct Action {
    TimePoint at;
    uint64_t order;
    uint32_t slot;
    bool operator>(const Action& o) const { return at != o.at ? at > o.at : order > o.order; }
  };
  std::priority_queue<Action, std::vector<Action>, std::greater<>> actions_;
  std::vector<std::function<void()>> slots_;
  std::vector<uint32_t> free_slots_;
  std::vector<EventRecord> events_;
  std::vector<std::unique_ptr<Msg>> msgs_;  // by seq - 1
  std::set<uint64_t> due_;                  // redeliveries ready, by seq
  // KV crash_guard: seqs whose reader never finished (or whose marker's delete failed), and the
  // marker's value as the shell writes it (crash_guard::Encode; its process: Instance::process).
  std::map<uint64_t, std::string> crash_markers_;
  int window_kills_ = 0;  // Scenario::reader_killer's kills inside marked windows so far
  uint64_t processes_started_ = 0;
  int own_marker_losses_ = 0;  // lease losses Scenario::own_marker made
  uint64_t next_new_ = 1;      // the next never-delivered seq
  int64_t unacked_ = 0;
  size_t acked_ = 0;
  std::function<void()> traffic_step_, end_check_;  // ScheduleTraffic's repeating steps
  std::vector<int64_t> visitor_clocks_;             // accepted_at per visitor (backlogs)
  int64_t same_instant_ = 0;                        // steps run since the clock last moved
  static constexpr int64_t kMaxStepsAtOneInstant = 200000;
  TimePoint last_ack_{};
  std::unordered_map<std::string, uint64_t> guard_;
  std::unordered_map<std::string, std::string> visit_kv_;
  std::unordered_map<uint64_t, TimePoint> dlq_ids_;  // origin seq -> when first copied
  std::vector<std::unique_ptr<UmamiProc>> umami_;
  std::vector<std::unique_ptr<Instance>> inst_;
  std::unique_ptr<Fetch> waiting_fetch_;
  uint64_t fetch_serial_ = 0;
  int leader_ = -1;
  TimePoint lease_free_at_{};
  int last_leader_ = 1;
  bool healed_done_ = false;  // drained: the periodic actions stop
  replayer::Ref next_ref_ = 0;
  bool traffic_over_ = false;
  bool healed_ = false;
  std::string failure_;
  Stats stats_;
  struct TraceLine {
    TimePoint at;
    const char* what;
    uint64_t a, b;
    int inst;
  };
  std::deque<TraceLine> trace_;
  size_t trace_limit_ = std::getenv("SIM_TRACE") ? 100000000 : 80;
  // Per process, the visitors whose sends failed for a write fault (read-only, half-writing)
  // lately: the simulator's own view of whether the rule could tell a write fault.
  std::vector<std::deque<std::pair<TimePoint, std::string>>> write_failures_;
  std::unordered_set<std::string> poison_lanes_;  // visitors with an event Umami always fails
  // Per process, the visitors whose sends Umami failed with an answer that may be about its
  // database (not "Website not found", not a validation refusal), and when: a write fault the
  // core declares must have three of them within its minute.
  std::vector<std::deque<std::pair<TimePoint, std::string>>> maybe_db_failures_;
  void NoteMaybeDbFailure(int process, const std::string& lane, const UmamiAnswer& a);
  void CheckWriteFaultEvidence(int process);
  // 3.1's visits: visit id -> (min, max) accepted_at of the events stored in it.
  std::unordered_map<uint64_t, std::pair<int64_t, int64_t>> visits_;
};

}  // namespace sim
