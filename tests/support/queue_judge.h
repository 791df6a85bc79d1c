// The one definition, for every test and benchmark, of three words their checks use: a queue
// "drained", messages "left behind", and each message "stored once". The fixtures (replayer,
// cluster, partition, metricswriter harness), the cluster tests' and the soak's figures, the
// metricswriter benches, bench/webgen and the container test (through container_judge) judge
// with these functions; docs/testing.md ("Drained, left behind, stored once") states the same
// rules in prose.
//
// Pure: no I/O, no clock. Inputs are JetStream's own numbers as platformctl reads them
// (platformctl::backlog::StreamReading, from nats_admin::ReadStream) and counts from the stores
// (tests/support/ledger.h). Any thread.
#pragma once

#include <cstdint>
#include <string>

#include "platformctl/backlog.h"

namespace testsupport::judge {

// Drained: the stream has at least one consumer, every consumer answered (none offline: its
// numbers would be unknown), and each has nothing pending (left to deliver) and nothing unacked
// (delivered, waiting for an ack). Whether the stream is empty is not part of it: a supported
// server (nats-server >= 2.10.27) removes an acked message from a work queue, but 2.9.10 kept
// some after a node's isolation (docs/operations.md, "Messages JetStream left behind"), and
// those are counted by LeftBehind, not waited for. A test that expects an empty stream checks
// LeftBehind(r) == 0 besides.
bool Drained(const platformctl::backlog::StreamReading& r);

// Left behind: the messages the stream holds beyond what its consumers still have to deliver or
// have unacked. Of a stream with one consumer this is platformctl's backlog::Unclaimed (what
// `platformctl streams` reports as LEFT BEHIND once a second reading confirms it); of a work
// queue with several (disjoint) consumers, what all of them together do not claim; of any other
// stream with several, what none of them claims; of a stream with no consumer, all it holds.
// An offline consumer claims nothing, so the count is exact only when Drained.
uint64_t LeftBehind(const platformctl::backlog::StreamReading& r);

// One line for a failure message or a log: "WEB_EVENTS: drained; holds 3 (seq 41..43), 3 left
// behind; consumer replayer pending 0 unacked 0". The held sequences are first..last: a range
// that may have holes, which names which messages they are for a look with `nats stream get`.
std::string Describe(const platformctl::backlog::StreamReading& r);

// "Stored once", counted: of `published` messages (by id), `stored` distinct ones are in the
// store, `duplicates` store rows beyond the first of any of them, `dead_lettered` were set aside
// in a DLQ (the stream's count: in a test that dead-letters none of its own this is an upper
// bound of theirs, so Lost() is then a lower bound, and such a test checks dead_lettered == 0
// as well). Lost: published, not stored and not in a DLQ.
struct Tally {
  std::string what;  // "web events", "metric batches": the figure's name
  int64_t published = 0;
  int64_t stored = 0;  // distinct
  int64_t duplicates = 0;
  int64_t dead_lettered = 0;

  int64_t Missing() const;  // published and not stored (dead-lettered or lost)
  int64_t Lost() const;     // Missing() - dead_lettered, floored at zero
  // Every published message stored exactly once: none lost, none dead-lettered, no duplicate.
  bool StoredOnce() const;
  // "web events: published 2000, stored 1998 distinct, duplicates 3, dead-lettered 2, lost 0"
  std::string Describe() const;
};

// The tally from a ledger's answers: `missing` = how many of the published ids the store lacks
// (Ledger::MissingEvents / MissingBatches).
Tally Count(std::string what, int64_t published, int64_t missing, int64_t duplicates,
            int64_t dead_lettered);

}  // namespace testsupport::judge
