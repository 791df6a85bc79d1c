// The words the replayer's engine core and its shell speak (docs/replayer.md, "Engine core").
//
// The core (engine_core.h) is a state machine without I/O: the shell feeds it inputs (a fetched
// batch, a lookup's answer, a send's answer, a health check's answer, a publish's outcome, a
// timer, leadership lost, stop), each with the time, and executes the commands it returns (fetch,
// look up, send, check, ack, nak, publish, arm a timer). Notes report what happened, for metrics
// and logs; executing them changes nothing. The seeded simulator (tests/sim) is the second shell.
// Plain values: safe to move between threads; none is shared.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "replayer/event.h"

namespace replayer {

using Clock = std::chrono::steady_clock;
using TimePoint = Clock::time_point;
using std::chrono::milliseconds;

// A delivery handle the shell assigns to every fetched message (a redelivery gets a new one).
using Ref = uint64_t;

// What holding a message costs beyond its bytes and its parsed event: the core's and nats.c's
// records of it, charged to the byte budget with them (Delivery::bytes). Measured: 10,000 small
// events held took 18.5 MiB more than 900 did, about 2.1 KiB each (bench/service_memory).
inline constexpr int64_t kHeldMessageBytes = 2048;

// A message as the core sees it. The shell keeps the message itself (payload, headers) under
// `ref` and parses it on its own thread: Parse() is pure.
struct Delivery {
  Ref ref = 0;
  uint64_t stream_seq = 0;
  uint64_t num_delivered = 1;
  bool replayed = false;  // carries Sa-Dlq-Replay: a copy of an event that may have been sent
  int64_t bytes = 0;      // payload, headers, parsed event, kHeldMessageBytes: the byte budget
  std::string subject;
  ParseResult parsed;
  // Set by the crash-loop guard (common/crash_guard.h) instead of parsing: an earlier reader
  // stopped while reading this message. parsed.poison_reason is then the guard's reason, and
  // this the evidence (the dead letter's detail).
  std::string crash_loop_detail;
};

// The answer of one HTTP request. status 0: no HTTP answer (refused, reset, timeout); see error.
struct HttpAnswer {
  int status = 0;
  std::string body;
  std::string error;
  double seconds = 0;
};

enum class Lookup { kFound, kAbsent, kError };

// How a publish (guard record, dead letter) ended.
struct PubOutcome {
  enum class Kind { kStored, kTooLarge, kFailed };
  Kind kind = Kind::kStored;
  std::string error;
};

enum class CheckPart { kHeartbeat, kProbe };

// Why an ack is given; the shell counts it, the simulator checks it.
// kStoredUnguarded: stored, but its guard record could not be written before the term ended:
// acking it then is what keeps it from being sent again (a released one would be).
enum class AckWhy { kStored, kStoredUnguarded, kDeadLettered, kDuplicate, kDroppedByUmami };

// --- commands ---------------------------------------------------------------------------------

// Fetch up to this many messages and bytes; answer with OnFetched (an empty batch on a timeout or
// an error). At most one fetch is outstanding.
struct FetchCmd {
  int max_messages = 0;
  int64_t max_bytes = 0;
};
// Read the duplicate guard (KV replayer_stored) for `key`; answer with
// OnGuardAnswer(lookup_id, ...).
struct GuardLookupCmd {
  uint64_t lookup_id = 0;
  std::string key;
};
// Read the visitor's visit state (KV visit_state); answer with OnVisitAnswer(lane, ...).
struct VisitLookupCmd {
  std::string lane;
  std::string key;
};
// POST /api/send, or with `batch` POST /api/batch (Umami 3.x): one visitor's consecutive events
// as a JSON array, all under the first one's headers.
struct SendCmd {
  uint64_t send_id = 0;  // answer with OnSendAnswer(send_id, ...)
  int process = 0;
  uint64_t stream_seq = 0;  // for logs and the simulator; the body is complete
  bool batch = false;
  std::vector<uint64_t> batch_seqs;  // with `batch`: every event's sequence, in the body's order
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  milliseconds timeout{0};
};
// Run the heartbeat and the collection probe against the process; answer each part with
// OnCheckAnswer(check_id, part, ...).
struct CheckCmd {
  uint64_t check_id = 0;
  int process = 0;
  // Each request's timeout: the send timeout. A check passes when Umami answers as a send must;
  // 5 s kept a process "down" for minutes on a loaded machine, where Umami's sends took 4.5 s
  // on average and no probe was answered within 5 s.
  milliseconds timeout{0};
};
struct AckCmd {
  Ref ref = 0;
  AckWhy why = AckWhy::kStored;
};
struct InProgressCmd {
  Ref ref = 0;
};
struct NakCmd {
  Ref ref = 0;
  milliseconds delay{0};
};
// Drop the handle without answering the server (an older delivery of a message delivered again,
// or everything held when the lease is lost): the server redelivers after the ack wait.
struct ForgetCmd {
  Ref ref = 0;
};
// The duplicate guard's record: the event is in Umami. Answer with OnPublished(pub_id, ...).
struct PutGuardCmd {
  uint64_t pub_id = 0;
  std::string key;
  std::string value;
};
// The visitor's visit state; nothing waits for it (a lost write costs one visit's continuity).
struct PutVisitCmd {
  std::string key;
  std::string value;
};
// Publish the WEB_DLQ copy of the message under `ref` (its payload unchanged); answer with
// OnPublished(pub_id, ...). The copy's message id derives from the origin's sequence, so a
// publish repeated after a lost answer stores one copy.
struct DeadLetterCmd {
  uint64_t pub_id = 0;
  Ref ref = 0;
  std::string reason;
  std::string code;    // the reason's metric label
  std::string detail;  // Umami's last answer, or empty
};
// Call OnTimer at (or soon after) this time; it replaces every earlier ArmTimerCmd.
struct ArmTimerCmd {
  TimePoint at{};
};

using Command =
    std::variant<FetchCmd, GuardLookupCmd, VisitLookupCmd, SendCmd, CheckCmd, AckCmd, InProgressCmd,
                 NakCmd, ForgetCmd, PutGuardCmd, PutVisitCmd, DeadLetterCmd, ArmTimerCmd>;

// --- notes ------------------------------------------------------------------------------------

struct Note {
  enum class Kind {
    kFetched,            // count: messages in a batch, status: of them redeliveries
    kFetchFailed,        // text: the error
    kStored,             // seq, accepted_at_ms
    kDroppedByUmami,     // seq: a bot, nothing stored
    kDuplicateSkipped,   // seq: stored before; acked without a send
    kDeadLettered,       // seq, subject, code, text: reason, detail: Umami's last answer
    kSendDone,           // process, seconds, count: events in it (a batch: more than 1),
                         // status: 1 when Umami answered it as a batch (a batch reply)
    kSendFailed,         // process, status, seq, text: answer excerpt
    kSendStuck,          // process, seq, first: no answer by the send timeout plus a grace
    kOutageRetried,      // process, seq
    kWriteFaultRetried,  // process, seq
    kProcessUp,          // process: its checks pass (again)
    kProcessDown,        // process, text: why
    kWriteFaultBegan,    // process, count: distinct failing visitors since the run began
    kWriteFaultEnded,    // process
    kCheckDone,          // process, seconds, status: 1 passed, 0 failed, text: detail
    kCheckTimedOut,      // process: no complete answer in time: counted as failed
    kCheckStuck,         // process, seconds: an abandoned check still has no answer
    kTokenIgnored,       // process, text: why the reply was not a usable token
    kGuardFailed,        // seq, text
    kLookupFailed,       // seq (0 for a visit lookup), text
    kDlqPublishFailed,   // seq, code: too_large | unavailable, text, first: first of its cause
    kRedeliveryAdopted,  // seq: a message held here was delivered again
    kReleased,           // count: messages handed back (nak) or left (forget) at the end
    kBatchRoute,         // process, status: 1 /api/batch is there, 0 it is not; text: why
    kSiteUnknown,        // subject, text: the website (excerpt), detail: Umami's answer
    kSiteKnown,          // subject, text: the website, seconds: since it was first unknown
  };
  Kind kind = Kind::kFetched;
  int process = -1;
  uint64_t seq = 0;
  int64_t accepted_at_ms = 0;
  int status = 0;
  int64_t count = 0;
  double seconds = 0;
  bool first = false;
  std::string code;
  std::string text;
  std::string detail;
  std::string subject;
};

// What one input produced. The shell executes `commands` in order.
struct Output {
  std::vector<Command> commands;
  std::vector<Note> notes;
  void clear() {
    commands.clear();
    notes.clear();
  }
};

}  // namespace replayer
