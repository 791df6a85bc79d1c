// `platformctl queue move`: an operator takes one held message out of a work queue (WEB_EVENTS,
// API_METRICS) into its DLQ, for whatever no rule of the services catches (docs/operations.md,
// "Moving one message out of a work queue"). The copy is an ordinary dead letter (so `dlq list`
// shows it, `dlq replay` can put it back and `dlq purge` remove it) whose reason says an operator
// moved it and whose detail says who, when and why. The copy is published first and the origin
// erased only once the DLQ acknowledged it, so a failure leaves the message where it was, or in
// both places (a replay's duplicate guard and batch ids absorb that), never nowhere.
//
// PlanMove and Operator are pure; RunQueueMove talks to NATS (the platformctl user needs message
// get and delete on the two work queues, and publish to dlq.web.* and dlq.api.*).
// Main thread only.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "common/message.h"
#include "common/nats_client.h"
#include "common/result.h"
#include "platformctl/dlq/nats.h"
#include "platformctl/dlq/select.h"

namespace platformctl::queue {

inline constexpr const char* kMovedReason = "moved out of its work queue by an operator";
inline constexpr size_t kMaxWhyBytes = 300;

struct MoveRequest {
  dlq::Queue queue = dlq::Queue::kWeb;
  uint64_t seq = 0;
  std::string why;        // the operator's words: required, one line, at most kMaxWhyBytes
  std::string operator_;  // Operator(): who moved it
};

// "NATS user <u>, <login>@<host>" from what the process knows of its user; values are made
// printable.
std::string Operator(const std::string& nats_user, const std::string& login,
                     const std::string& host);

// Checks the request (kInvalid names what is wrong).
common::Status CheckRequest(const MoveRequest& r);

// The dead letter of the held message `m` (stored in `origin_stream` at m.seq), as the services
// build theirs (common/dead_letter.h), with kMovedReason and a detail "by <operator> at <time>:
// <why>".
common::OutMessage PlanMove(const MoveRequest& r, const nats_dlq::StoredMessage& m,
                            const std::string& origin_stream, int64_t now_ns);

// Exit codes as platformctl's: 0 moved, 1 not (or only half) done, with what is true now said on
// `err`.
int RunQueueMove(common::NatsClient& client, const MoveRequest& r, std::ostream& out,
                 std::ostream& err);

}  // namespace platformctl::queue
