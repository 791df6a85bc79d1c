// The crash-loop guard's decisions, without I/O (docs/contract.md §3.5).
//
// A message a service dies on while reading it (a decoder bug, a stack or memory limit hit by a
// hostile input) comes back to the next leader, which would die on it too, and no role may
// remove a message from a work queue: one message would stop the queue for every site or tenant.
// So a service reads a *redelivered* message (delivery 2 and later: a first delivery cannot
// have been read before) only after writing a marker "reading it now" to KV `crash_guard`, and
// removes the marker once the reading ended, whatever it found. A redelivered message whose
// marker is still there was being read when its reader stopped: it is dead-lettered with a
// reason that says so instead of being read again. A message that kills every reader is thus
// dead-lettered at its third delivery (the first read unmarked, the second marked), by
// whichever instance leads then.
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
};
// "<delivery> <unix ms> <instance>\t<process>" (a tab, which Printable never leaves in the
// instance; without it, a marker of before: no process); Decode is nullopt for anything else.
std::string Encode(const Marker& m);
std::optional<Marker> Decode(std::string_view value);

// The marker's key: "<durable>.<stream sequence>" (the durable names the service's queue).
std::string Key(std::string_view durable, uint64_t stream_seq);

enum class Step {
  kRead,          // a first delivery: read it
  kMarkThenRead,  // a redelivery nobody was reading: write the marker, read, remove it
  kDeadLetter,    // a redelivery whose reader stopped while reading it
};
// `own_marker`: the marker found was written by this very process (Marker::process), which
// did not die reading the message: marked and read again, not dead-lettered.
Step Decide(uint64_t num_delivered, bool marker_found, bool own_marker = false);
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
    "crash-loop guard: a reader stopped while reading this message (it is not read again)";
std::string Detail(std::string_view marker, uint64_t num_delivered);

}  // namespace common::crash_guard
