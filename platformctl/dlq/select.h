// Which DLQ messages a `platformctl dlq` command works on: the queues, the selection options
// (--all, --from, --to, --key, --reason, combined with AND) and the view of one DLQ message that
// list, replay and purge share. The view is built from the Sa-Dlq-* headers only: it has no
// field for the payload, so nothing that prints a view can print one.
//
// Pure: no I/O, no clock; safe from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"

namespace platformctl::dlq {

enum class Queue { kWeb, kApi };

struct QueueInfo {
  Queue queue = Queue::kWeb;
  std::string name;           // "web" or "api"
  std::string dlq_stream;     // WEB_DLQ
  std::string origin_stream;  // WEB_EVENTS
  std::string dlq_prefix;     // "dlq.web."
  std::string key_name;       // "site" or "tenant"
};

std::optional<Queue> ParseQueue(std::string_view text);
QueueInfo InfoFor(Queue q);

// A --from / --to value: a DLQ sequence ("1200") or a time (RFC 3339, e.g.
// 2026-11-29T16:10:13Z, 2026-11-29T18:10:13.5+02:00, or a day 2026-11-29 meaning its start in
// UTC).
struct Bound {
  bool is_time = false;
  uint64_t seq = 0;
  int64_t time_ns = 0;
};
common::Result<Bound> ParseBound(std::string_view text);
common::Result<int64_t> ParseRfc3339(std::string_view text);  // unix ns

// What list, replay and purge know about one DLQ message. Missing headers leave fields empty.
struct Entry {
  uint64_t seq = 0;
  int64_t time_ns = 0;                 // dead-lettered: the DLQ message's own timestamp
  std::string key;                     // site id (web) or tenant id (api), from the subject
  std::string stream;                  // Sa-Dlq-Stream
  std::optional<uint64_t> stream_seq;  // Sa-Dlq-Stream-Seq, when it is a number
  std::string subject;                 // Sa-Dlq-Subject
  uint64_t size = 0;                   // payload bytes
  std::string reason;                  // Sa-Dlq-Reason
  std::string detail;                  // Sa-Dlq-Detail: the evidence (an answer, who moved it)
};

using HeaderLookup = std::function<std::optional<std::string>(const char* name)>;
Entry MakeEntry(const QueueInfo& q, uint64_t seq, int64_t time_ns, std::string_view dlq_subject,
                uint64_t size, const HeaderLookup& header);

// A site or tenant id usable as one subject token: not empty, no '.', '*', '>' or white space.
bool ValidKey(std::string_view key);

// Printable form of a value that came from outside (a subject key, a reason): control bytes
// become '?', so a crafted site id cannot drive the operator's terminal.
std::string Printable(std::string_view s);

class Selection {
 public:
  struct Spec {
    bool all = false;
    std::optional<std::string> from, to;  // as typed
    std::optional<std::string> key;
    std::optional<std::string> reason;
  };

  // Invalid (with a message naming the option) when a bound does not parse, --from is after
  // --to, or the key is not a single subject token.
  static common::Result<Selection> Parse(const Spec& spec);

  // No option at all: list shows everything; replay and purge refuse.
  bool empty() const { return empty_; }
  bool Matches(const Entry& e) const;

  // Narrowing for the reader, so a --key or --from walk does not read the whole queue.
  std::string FilterSubject(const QueueInfo& q) const;  // dlq.web.<key> or dlq.web.*
  uint64_t StartSeq() const;                            // --from as a sequence, else 1
  int64_t StartTimeNs() const;                          // --from as a time, else 0
  // The last sequence to look at: the queue's last sequence when the run started, or --to.
  uint64_t EndSeq(uint64_t last_seq_at_start) const;

  // "--key site-a --reason 'health checks'" for reports.
  std::string Describe() const;

 private:
  bool empty_ = true;
  bool all_ = false;
  std::optional<Bound> from_, to_;
  std::optional<std::string> key_;
  std::optional<std::string> reason_;        // as typed
  std::optional<std::string> reason_lower_;  // for the case-insensitive match
};

}  // namespace platformctl::dlq
