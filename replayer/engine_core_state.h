// Private to the engine core (engine_core*.cpp): its state. Nothing else includes this file.
#pragma once

#include <deque>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "replayer/classifier.h"
#include "replayer/engine_core.h"
#include "replayer/lanes.h"
#include "replayer/recent_seqs.h"
#include "replayer/timer_heap.h"
#include "replayer/umami_reply.h"
#include "replayer/visit_state.h"

namespace replayer {
namespace core_detail {

constexpr milliseconds kTick{1000};
constexpr milliseconds kDownRecheck{2000};
// A send, or a check (its requests time out with the send timeout too), with no answer by the
// send timeout plus this is given up as failed: the HTTP client should have answered with a
// timeout by then; this holds even if it never answers.
constexpr milliseconds kSendGrace{5000};
constexpr milliseconds kGuardAckWait{10'000};
constexpr milliseconds kGuardRetry{1000};
// A guard record unanswered for this long closes the guard gate as a failed one does: the KV
// bucket answers in milliseconds when it can, and a cut-off leader's records only fail after
// their publish times out, seconds of sends later (docs/replayer.md, "The guard gate").
constexpr milliseconds kGuardSlow{1000};
constexpr milliseconds kLookupRetry{1000};
constexpr milliseconds kDeadLetterAckWait{15'000};
constexpr milliseconds kDeadLetterRetry{5000};
// A copy the server refused for its size: retried slowly (each refusal counted and alerted on),
// since only an operator can make room.
constexpr milliseconds kDeadLetterTooLargeRetry{60'000};
constexpr milliseconds kFetchRetry{250};
constexpr milliseconds kStopGrace{15'000};
// After the last fetch answered: its pull request may still be open on the server a little
// longer; a nak before it closes would hand the message straight back to it.
constexpr milliseconds kPullExpiry{600};
constexpr milliseconds kVisitSweep{60'000};
constexpr size_t kRecentFinished = 16384;
constexpr int kMaxProbeRoom = 100;
// A process found without /api/batch is asked again after this: an upgraded Umami may have it.
constexpr milliseconds kBatchRelearn{600'000};
// A batch's events' bytes (payloads and headers) at most: Umami reads the whole array at once.
constexpr int64_t kBatchMaxBytes = 512 * 1024;

// An operation's id (send, lookup, publish) names its event: the event id above kOpBits, a
// count of the event's operations below. An answer finds its event without an index, and one
// to an operation the event has moved on from differs from Held::op. Ids stay below bit 63
// (the shell's mark for check answers) for 2^43 events per process.
constexpr int kOpBits = 20;
constexpr uint64_t kOpMask = (uint64_t{1} << kOpBits) - 1;
inline uint64_t EventOfOp(uint64_t op) { return op >> kOpBits; }

inline constexpr const char* kOverflowReason =
    "more than 64 events of this visitor were held behind an event umami keeps failing";
inline constexpr const char* kCodeFailed = "failed_4_times";
inline constexpr const char* kCodeOverflow = "visitor_overflow";
inline constexpr const char* kCodePoison = "poison";
inline constexpr const char* kCodeCrashLoop = "crash_loop";
inline constexpr const char* kCodeSiteUnknown = "site_unknown";

// A website Umami answered "not found" for (engine_core_site.cpp). Its events go to WEB_DLQ
// without a send until `next_try`; then (or for a replayed event at once) one of them is sent
// (`probe`) while the others wait in `waiting`.
struct SiteBlock {
  TimePoint since{};     // the first such answer
  TimePoint answered{};  // the last such answer
  TimePoint next_try{};
  std::string answer;  // its excerpt
  uint64_t probe = 0;  // the event sent to find out, 0: none
  std::vector<uint64_t> waiting;
  int64_t unsent = 0;  // events dead-lettered without a send since the last answer
};

// kLookingUp: its duplicate guard is being read. kFinishing: stored, its guard record under
// way. kDeadLettering: its WEB_DLQ copy under way; kDeadLetterWait: to be published again.
// kBatched: sent in the batch of the lane's head, which is kSending and answers for it.
enum class Stage {
  kLookingUp,
  kWaiting,
  kReady,
  kSending,
  kChecking,
  kBackoff,
  kFinishing,
  kDeadLettering,
  kDeadLetterWait,
  kBatched,
  kSiteWait,  // its site's events wait for one of them, sent to see if Umami knows the site now
};

struct Held {
  Ref ref = 0;
  uint64_t seq = 0;
  int64_t bytes = 0;
  std::string subject;
  WebEvent ev;   // empty for poison at once
  LaneKey lane;  // empty for poison at once
  Stage stage = Stage::kWaiting;
  int failures = 0;     // counted failures
  int fault_parks = 0;  // times it was parked by a write fault
  bool parked_write_fault = false;
  bool token_sent = false;  // the send under way carries the visit's token
  int process = -1;
  TimePoint sent_at{};    // when the last send began
  uint64_t sent_op = 0;   // its place in next_op's order: a check with a greater one began after
  uint64_t op = 0;        // the send, lookup or publish under way (its id), 0 for none
  uint64_t op_count = 0;  // the event's operations so far (the low bits of its op ids)
  uint64_t gen = 0;       // a timer armed before the last stage change is ignored
  TimePoint touched{};
  std::vector<uint64_t> batch;  // a head sent in a batch: the events behind it there, in order
  std::string last_answer;      // "HTTP 500: ..." of the last failed send
  AnswerAbout about = AnswerAbout::kOther;  // what that answer was about
  bool replayed = false;                    // put back from WEB_DLQ (Sa-Dlq-Replay)
  std::string dlq_reason;
  std::string dlq_code;
};

// Whether a process has POST /api/batch: unknown until a batch's answer tells.
enum class BatchRoute { kUnknown, kYes, kNo };

struct Proc {
  std::string name;
  BatchRoute batch = BatchRoute::kUnknown;
  BatchRoute batch_said = BatchRoute::kUnknown;  // the last one noted
  TimePoint batch_no_at{};                       // when it was found without one
  ProcessHealth health;
  WriteFaultRun run;
  TimePoint last_store{};
  int in_flight = 0;
  uint64_t check_id = 0;  // the check under way; 0: none
  uint64_t check_op = 0;  // the id of the last check begun (ids order checks and sends)
  TimePoint check_started{};
  bool heartbeat_answered = false, probe_answered = false;
  bool heartbeat_ok = false, probe_ok = false;
  std::string check_detail;
  std::map<uint64_t, TimePoint> abandoned;  // checks given up, still unanswered
  std::vector<uint64_t> checking;  // events waiting for a check of this process (some stale)
  bool check_stuck_noted = false;
  bool send_stuck_noted = false;
  bool token_noted = false;
};

struct Timer {
  TimePoint at;
  uint64_t eid;
  uint64_t gen;
  bool operator>(const Timer& o) const { return at > o.at; }
};

enum class Mode { kRunning, kStopping, kLeaseLost };

}  // namespace core_detail

using namespace core_detail;  // NOLINT: private header of one component

struct EngineCore::State {
  explicit State(CoreConfig c);

  CoreConfig cfg;
  Output out;
  std::vector<Proc> procs;
  // The write-fault run over every process together: Umami's processes usually share one
  // database, and with few visitors spread over several processes no single process may see
  // three of them fail.
  WriteFaultRun shared_run;
  std::unordered_map<uint64_t, Held> held;        // by event id (the core's own)
  std::unordered_map<uint64_t, uint64_t> by_seq;  // stream sequence -> event id
  TimerHeap<Timer> timers;  // at most one live entry per held event: see Arm()
  std::deque<uint64_t> ready;
  std::unordered_map<std::string, SiteBlock> sites;  // by website id; at most kMaxSiteBlocks
  Lanes lanes;
  VisitStates visits;
  // Lanes whose visit state is being read.
  std::unordered_set<LaneKey, LaneKey::Hash> visit_lookups;
  RecentSeqs recent{kRecentFinished};
  uint64_t next_eid = 0;
  uint64_t next_op = 0;  // orders checks and sends (FreshSince); ids of checks
  int held_count = 0;
  int64_t held_bytes = 0;
  int sends = 0;
  bool fetching = false;
  // A guard record failed to be written and none has been written since: the KV bucket cannot
  // be reached (a partition, a KV outage). No new send starts meanwhile (docs/replayer.md,
  // "The duplicate guard"): whatever Umami stores now cannot be recorded, and the next leader
  // would send it again. The failed record's retries (every kGuardRetry) are the probe.
  bool guard_blocked = false;
  // Guard records in the order they were written (event, op, when), the oldest unanswered
  // first; entries whose event has moved on are dropped from the front as Dispatch looks.
  struct GuardWrite {
    uint64_t eid;
    uint64_t op;
    TimePoint since;
  };
  std::deque<GuardWrite> guard_writes;
  // Messages the intake may take beyond max_in_flight while the core is stalled: see Tick().
  int probe_room = 0;
  int parked = 0;  // events parked by a write fault (kBackoff with parked_write_fault)
  TimePoint fetch_retry_at{};
  TimePoint last_fetch_answer{};
  TimePoint next_tick{};
  TimePoint next_sweep{};
  TimePoint armed{};
  std::vector<uint64_t> batch_scratch, lane_scratch;  // BatchFor's, reused
  bool dlq_too_large_noted = false;
  bool dlq_unavailable_noted = false;
  Mode mode = Mode::kRunning;
  TimePoint stop_deadline{};
  TimePoint release_at{};
  bool done = false;

  template <typename T>
  void Emit(T cmd) {
    out.commands.emplace_back(std::move(cmd));
  }
  Note& Tell(Note::Kind kind) {
    Note& n = out.notes.emplace_back();
    n.kind = kind;
    return n;
  }

  // engine_core.cpp: intake, budget, stop; engine_core_timers.cpp: Arm, CompactTimers, Fire,
  // Tick.
  void AfterInput(TimePoint now);
  void MaybeFetch(TimePoint now);
  int FetchRoom() const;  // what the next fetch may ask for; 0: not now
  void Admit(Delivery d, TimePoint now);
  void LookUpGuard(uint64_t eid, Held& h);
  void EnsureVisitKnown(const LaneKey& lane, const WebEvent& ev, TimePoint now);
  void TryReady(uint64_t eid, TimePoint now);
  void MakeReady(uint64_t eid, Held& h);
  // A new operation id for the event: an answer to the one before is ignored from now on.
  void NewOp(uint64_t eid, Held& h);
  // The held event an answer is for, if the operation is still its current one.
  Held* CurrentOp(uint64_t op);
  void Arm(uint64_t eid, Held& h, TimePoint at);
  // Drops the stale timers once they outnumber the live ones (replayer/timer_heap.h).
  void CompactTimers();
  void Fire(uint64_t eid, Held& h, TimePoint now);
  void Tick(TimePoint now);
  void Finish(uint64_t eid, TimePoint now);
  void MaybeRelease(TimePoint now);

  // engine_core_send.cpp: sends, checks, decisions, publishes.
  void Dispatch(TimePoint now);
  bool AnyFinishing() const;  // O(held): called only while guard_blocked
  bool GuardGateClosed(TimePoint now);
  int PickProcess() const;
  bool AllDown() const;  // every process's last check failed: no head can be tried now
  void Send(uint64_t eid, Held& h, int p, TimePoint now);
  // The events that may ride in one batch behind the head `h` to process `p` (none: /api/send).
  void BatchFor(const Held& h, int p, const std::string& token, TimePoint now);
  void EndSend(Held& h);
  void OnStored(uint64_t eid, Held& h, const SendReply& reply, TimePoint now);
  void OnBatchAnswer(uint64_t eid, Held& h, const HttpAnswer& a, TimePoint now);
  // A batch failed or was not taken as a whole: the events behind the head wait again, uncharged.
  void Unbatch(Held& head);
  void SetBatchRoute(int p, BatchRoute route, const std::string& why, TimePoint now);
  void OnFailed(uint64_t eid, Held& h, TimePoint now);
  void StartCheck(int p, TimePoint now);
  void CompleteCheck(int p, bool passed, TimePoint now);
  void Decide(uint64_t eid, Held& h, bool passed, TimePoint now);
  void WakeParked(TimePoint now);
  void PutGuard(uint64_t eid, Held& h, TimePoint now);
  void DeadLetter(uint64_t eid, Held& h, const std::string& reason, const std::string& code,
                  TimePoint now);
  void OnPublishedGuard(uint64_t eid, Held& h, const PubOutcome& o, TimePoint now);
  void OnPublishedDeadLetter(uint64_t eid, Held& h, const PubOutcome& o, TimePoint now);

  // engine_core_site.cpp: websites Umami does not hold (docs/replayer.md, "Unknown websites").
  // A failed send's answer: about the site goes to OnSiteUnknown, else to OnFailed.
  void OnSendFailed(uint64_t eid, Held& h, int status, std::string_view body, TimePoint now);
  void OnSiteUnknown(uint64_t eid, Held& h, TimePoint now);
  // Before a send: true when the event was dead-lettered unsent or set to wait for its site's
  // probe (it is then out of `ready`).
  bool HeldBySite(uint64_t eid, Held& h, TimePoint now);
  // The event was stored: its site, if blocked, is known again.
  void SiteStored(const Held& h, TimePoint now);
  // The event leaves the core: if it was its site's probe, the next waiting one may go.
  void SiteForget(uint64_t eid, const Held& h, TimePoint now);
};

}  // namespace replayer
