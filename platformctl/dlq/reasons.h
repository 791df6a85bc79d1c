// The exporter's count of a DLQ's messages by reason (`platformctl streams --serve
// --dlq-reasons`, gauge jetstream_dlq_messages{stream,reason}).
//
// A DLQ's subjects carry the site or tenant, not the reason: the reason is in each dead letter's
// Sa-Dlq-Reason header (docs/contract.md §3.3), so the messages have to be read. Reading every
// one at every interval would cost a walk of the whole DLQ each time; DlqReasonTally keeps the
// label of every sequence it read and plans, at each reading of the stream, only the sequences
// above the last one it read, at most `cap` of them (the rest at the next readings: `unread`
// says how many are not counted yet). Messages gone from the stream's front (expired, erased
// first) are dropped by the stream's first sequence; when it holds fewer messages than the tally
// counts (erased in the middle: dlq purge, erase), the tally starts again from the front.
// The label is the reason's sentence up to its first ':' (what varies, the evidence, comes after
// it), printable ASCII, at most 64 bytes; at most kMaxReasons labels per stream, the rest
// "other"; a dead letter without the header is "none".
//
// Pure, no I/O (the exporter walks the DLQ with headers only: it never holds a payload). Not
// thread-safe: one reading thread uses it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace platformctl {

class DlqReasonTally {
 public:
  static constexpr size_t kMaxReasons = 32;

  struct Range {
    uint64_t from = 0;  // first sequence to read
    uint64_t to = 0;    // last one (inclusive)
  };

  // The stream as just read (first sequence, last sequence, messages held): what to read now,
  // nullopt when everything is counted.
  std::optional<Range> Plan(uint64_t first_seq, uint64_t last_seq, uint64_t messages, uint64_t cap);
  // A message of the planned range, with its Sa-Dlq-Reason (nullopt: the header is absent).
  void Add(uint64_t seq, const std::optional<std::string>& reason);
  // The planned range was read through `to` (messages erased meanwhile were simply not there).
  void Walked(uint64_t to);

  // Messages counted, by label; every label seen once stays (at 0 when none is left).
  std::map<std::string, uint64_t> Counts() const;
  // Messages held and not yet counted.
  uint64_t Unread(uint64_t messages) const;

  static std::string Label(std::string_view reason);

 private:
  uint16_t Index(const std::string& label);

  std::map<uint64_t, uint16_t> seen_;  // seq -> index in labels_
  std::vector<std::string> labels_;
  uint64_t cursor_ = 1;  // the next sequence not read yet
};

}  // namespace platformctl
