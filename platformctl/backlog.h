// What `platformctl streams` (and the services' gauges) say about a queue, computed from two
// readings of JetStream's own numbers.
//
// Pure: no I/O; the reading times are inputs, so tests control the clock. Rules the numbers keep
// (see the queue-observability notes): pending (not yet delivered) and unacknowledged (delivered,
// not acked) are never added together; a rate is the difference of two readings over their
// interval, floored at zero; the backlog age comes from the oldest message still held.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace platformctl::backlog {

struct ConsumerReading {
  std::string name;
  uint64_t pending = 0;               // not yet delivered to anyone
  uint64_t unacked = 0;               // delivered, waiting for an ack
  uint64_t redelivered = 0;           // messages delivered more than once, still unacked
  uint64_t delivered_seq = 0;         // consumer sequence of the last delivery
  uint64_t ack_floor_seq = 0;         // consumer sequence below which all are acked
  uint64_t ack_floor_stream_seq = 0;  // the same floor as a stream sequence
  int64_t last_delivered_ns = 0;
  int64_t last_acked_ns = 0;
  int64_t max_ack_pending = 0;  // the consumer's limit; -1 = unlimited
  int64_t waiting_pulls = 0;
  // Its server did not answer (down, or a node that died holding it): no numbers, only the name.
  bool offline = false;
};

struct StreamReading {
  std::string name;
  int64_t read_at_ns = 0;  // when JetStream answered
  uint64_t messages = 0;
  uint64_t bytes = 0;
  uint64_t first_seq = 0;
  uint64_t last_seq = 0;
  int64_t first_ns = 0;     // timestamp of the oldest held message (meaningless when messages == 0)
  bool work_queue = false;  // retention: an acked message is removed
  int64_t max_bytes = -1;   // the stream's storage limit per replica; -1: unlimited
  std::vector<ConsumerReading> consumers;
};

struct ConsumerView {
  ConsumerReading now;
  std::optional<double> delivery_rate;  // deliveries/s (redeliveries included)
  // acks/s: a work queue's one consumer's from the messages removed (an ack removes one), exact;
  // any other's from the ack floor, a lower bound (one unacked message holds the floor while
  // acks go on past it).
  std::optional<double> ack_rate;
  bool ack_rate_from_floor = true;
  // A work queue's one consumer whose ack floor did not move over the interval while messages
  // were removed: acks go on past messages still in work (for the replayer: visitors whose
  // events wait behind one Umami keeps failing). The floor's message is the oldest held.
  bool floor_held = false;
  bool saturated = false;  // unacked at its max_ack_pending: it can be handed nothing more
  bool wedged = false;     // unacked > 0 and nothing acked over the interval
};

struct StreamView {
  StreamReading now;
  std::optional<int64_t> oldest_ns;          // nullopt when nothing is held
  std::optional<double> oldest_age_seconds;  // now - oldest held message
  std::optional<double> interval_seconds;    // between the two readings
  std::optional<double> in_rate;             // messages stored/s
  std::optional<double> out_rate;            // messages removed/s (acked, erased, expired)
  // Seconds until empty at the current net drain rate; nullopt when unknown or not draining.
  std::optional<double> time_to_clear_seconds;
  bool draining = false;  // out_rate > in_rate, or empty (left-behind messages aside)
  // A work queue whose one consumer has been handed everything (pending 0 in both readings)
  // and acks as it arrives: what it holds is in work, not waiting for it; the net drain of zero
  // is no backlog. Not set when draining.
  bool keeping_up = false;
  // A work queue's held messages that its one consumer acked and JetStream did not remove
  // (nats-server 2.9.10 left some behind after a node's isolation; docs/operations.md). Known
  // from two readings only: the oldest held message is the same in both and the consumer's ack
  // floor had passed it at the first, so an ack racing the two requests of one reading is never
  // taken for one. nullopt: unknown (one reading, not a work queue, no single answering
  // consumer). The oldest held message is then one of them, so the age says nothing of the
  // backlog; time-to-clear counts the others.
  std::optional<uint64_t> left_behind;
  std::vector<ConsumerView> consumers;
  // What the service that consumes the stream says of its work, from its lease (the replayer's:
  // blocked_visitors, blocked_sites, sites_unknown); empty when unread or nothing said. Set by
  // the caller after Compute (streams.cpp reads the lease), not by Compute.
  std::map<std::string, int64_t> worker_status;
  std::string worker;  // who said it: the lease holder
};

// `before` may be absent (one reading: no rates). A consumer new in `now` has no rates.
StreamView Compute(const std::optional<StreamReading>& before, const StreamReading& now);

// Held messages the consumer knows nothing of: neither still to deliver nor unacked (the
// stream's messages beyond pending + unacked, floored at zero). Of a work queue's one consumer
// with pending 0 and unacked 0: what it acked and the stream still holds (left behind). One
// reading; `left_behind` above needs two to tell those from an ack racing the reading. The
// tests' "left behind" (tests/support/queue_judge.h) is this.
uint64_t Unclaimed(const StreamReading& r, const ConsumerReading& c);

// A rate over an interval, floored at zero (counters that went back mean a reset, not negative
// traffic). Nullopt when the interval is not positive.
std::optional<double> Rate(uint64_t before, uint64_t after, double interval_seconds);

}  // namespace platformctl::backlog
