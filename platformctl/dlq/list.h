// What `platformctl dlq list` prints: one line per DLQ message, the docs/contract.md §9 JSON, and
// the counts per reason and per key (--summary, and what purge would do without --yes).
//
// Pure: formats Entries (which hold no payload) onto a stream; no I/O of its own, no clock.
// A ListSummary is filled by one thread.
#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "platformctl/dlq/select.h"

namespace platformctl::dlq {

// Columns aligned over all entries: SEQ DEAD-LETTERED KEY ORIGIN SUBJECT SIZE REASON.
void PrintListText(const std::vector<Entry>& entries, const QueueInfo& q, std::ostream& out);
// {"queue":..,"stream":..,"count":N,"messages":[{seq,time,key,stream,stream_seq,subject,size,
// reason}]} on one line.
void PrintListJson(const std::vector<Entry>& entries, const QueueInfo& q, std::ostream& out);

class ListSummary {
 public:
  void Add(const Entry& e);
  uint64_t count() const { return count_; }
  uint64_t bytes() const { return bytes_; }

  // Text: totals, the sequence and time range, then counts per reason (all) and per key (the
  // largest `max_keys`, the rest summed on one line).
  void PrintText(const QueueInfo& q, std::ostream& out, size_t max_keys = 20) const;
  // {"queue","stream","count","bytes","first_seq","last_seq","first_time","last_time",
  //  "by_reason":[{"reason","count"}],"by_key":[{"key","count"}]}, largest first.
  void PrintJson(const QueueInfo& q, std::ostream& out) const;

 private:
  uint64_t count_ = 0;
  uint64_t bytes_ = 0;
  uint64_t first_seq_ = 0, last_seq_ = 0;
  int64_t first_ns_ = 0, last_ns_ = 0;
  std::map<std::string, uint64_t> by_reason_;
  std::map<std::string, uint64_t> by_key_;
};

}  // namespace platformctl::dlq
