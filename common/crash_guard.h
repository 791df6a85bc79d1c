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
};
// "<delivery> <unix ms> <instance>"; Decode is nullopt for anything else.
std::string Encode(const Marker& m);
std::optional<Marker> Decode(std::string_view value);

// The marker's key: "<durable>.<stream sequence>" (the durable names the service's queue).
std::string Key(std::string_view durable, uint64_t stream_seq);

enum class Step {
  kRead,          // a first delivery: read it
  kMarkThenRead,  // a redelivery nobody was reading: write the marker, read, remove it
  kDeadLetter,    // a redelivery whose reader stopped while reading it
};
Step Decide(uint64_t num_delivered, bool marker_found);

// The dead letter's reason (one sentence, countable: no numbers) and detail (the marker's
// evidence, printable, bounded). `marker`: the value found, as read (may be unreadable).
inline constexpr const char* kReason =
    "crash-loop guard: a reader stopped while reading this message (it is not read again)";
std::string Detail(std::string_view marker, uint64_t num_delivered);

}  // namespace common::crash_guard
