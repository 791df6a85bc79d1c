// The crash-loop guard's decisions, without I/O (docs/contract.md §3.5).
//
// A message a service dies on while reading it (a decoder bug, a stack or memory limit hit by a
// hostile input) comes back to the next leader, which would die on it too, and no role may
// remove a message from a work queue: one message would stop the queue for every site or tenant.
// So a service reads a *redelivered* message (delivery 2 and later: a first delivery cannot
// have been read before) only after writing a marker "reading it now" to KV `crash_guard`, and
// removes the marker once the reading ended, whatever it found. A redelivered message whose
// marker is still there was being read when its reader stopped.
// One stopped reader is not proof: a reader killed from outside (kill -9, a lost node, an OOM
// kill) between writing a marker and deleting it leaves the same marker, and a new leader reads
// its whole burst of redeliveries in that window, two synced KV round trips each (a good event
// was dead-lettered so under load). So a marker of another process counts one stop and the
// message is marked again with the count and read; only when a second reader stopped too
// (kStoppedReaders) is it dead-lettered, with a reason that says so. A message that kills every
// reader is thus dead-lettered at its fourth delivery (the first read unmarked, the second and
// third marked), by whichever instance leads then.
// A first delivery pays nothing; a redelivery one marker write and one delete, besides the read
// of the marker. Markers live a day (the bucket's TTL): a marker of a message no longer in its
// stream is of no use.
// Pure: safe from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace common::crash_guard {

// What a marker says: which delivery was being read, since when, by whom.
struct Marker {
  uint64_t delivery = 0;
  int64_t unix_ms = 0;
  std::string instance;  // INSTANCE_NAME of the reader
  // The reading process ("<pid>@<its start, unix ms>"); empty in a marker written before it
  // was kept. A marker of the process that finds it is no crash: that process lives, it only
  // lost its lease (or the marker's removal failed) while reading.
  std::string process;
  // How many readers stopped while reading this message before this one began.
  uint32_t stops = 0;
};
// "<delivery> <unix ms> <instance>[\t<process>[\t<stops>]]" (tabs, which Printable never leaves
// in the instance or process; a marker written before a field was kept has none: no process,
// 0 stops); Decode is nullopt for anything else.
std::string Encode(const Marker& m);
std::optional<Marker> Decode(std::string_view value);

// The marker's key: "<durable>.<stream sequence>" (the durable names the service's queue).
std::string Key(std::string_view durable, uint64_t stream_seq);

// Readers that must have stopped while reading a message before it is dead-lettered.
inline constexpr uint32_t kStoppedReaders = 2;

enum class Step {
  kRead,          // a first delivery: read it
  kMarkThenRead,  // a redelivery: write the marker (counting Decision::stops), read, remove it
  kDeadLetter,    // a redelivery kStoppedReaders readers stopped while reading
};
struct Decision {
  Step step = Step::kRead;
  uint32_t stops = 0;         // the stops the marker to write counts (kMarkThenRead)
  bool stop_counted = false;  // the marker found was another reader's: one stop more
};
// `found`: the marker in the bucket, as read (empty: none); `this_process`: ThisProcess().
// A marker of this very process (Marker::process) is no stop: the process lives, it lost its
// lease (or the marker's removal failed) while reading; its count is kept. A marker that cannot
// be decoded counts as one stop.
Decision Decide(uint64_t num_delivered, const std::optional<std::string>& found,
                std::string_view this_process);
// This process's token for Marker::process.
std::string ThisProcess();

// After a request to the bucket failed or went unanswered, the guard rests: redelivered messages
// are read without it (as the one whose request failed was) and the bucket is asked again only
// once `length` has passed. Without the rest a bucket that does not answer costs one request
// timeout (5 s) per redelivered message, on the thread that reads them all: behind a partition
// a batch of 100 redeliveries held a whole queue for as long as the cut lasted (partition (f) on
// nats-server 2.15.1, docs/operations.md). A plain value; the caller's clock.
class Rest {
 public:
  using Clock = std::chrono::steady_clock;
  explicit Rest(std::chrono::milliseconds length) : length_(length) {}
  bool Resting(Clock::time_point now) const { return now < until_; }
  void Failed(Clock::time_point now) { until_ = now + length_; }
  std::chrono::milliseconds length() const { return length_; }

 private:
  std::chrono::milliseconds length_;
  Clock::time_point until_{};
};

// How long the guard rests after a failure: a redelivery read unguarded is the cost (a reader
// killer among them kills one reader more before it is dead-lettered), an unanswered request
// every 30 s the most a silent bucket takes from the reading thread.
inline constexpr std::chrono::milliseconds kRestAfterFailure{30'000};

// The dead letter's reason (one sentence, countable: no numbers) and detail (the marker's
// evidence, printable, bounded). `marker`: the value found, as read (may be unreadable).
inline constexpr const char* kReason =
    "crash-loop guard: two readers stopped while reading this message (it is not read again)";
static_assert(kStoppedReaders == 2, "kReason says two readers");
std::string Detail(std::string_view marker, uint64_t num_delivered);

}  // namespace common::crash_guard
