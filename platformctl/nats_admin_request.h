// JetStream API requests made by hand, and how long to keep retrying what a cluster retries.
//
// platformctl runs when something is down. In a cluster a request can go unanswered for a few
// seconds (a stream, consumer or meta leader died or was paused and the others elect another:
// nats-server 2.9 takes up to ~10 s), or be answered "cluster not available" meanwhile; both
// pass. Patience decides how long such a wait may last; ApiRequest and the walkers built on it
// (nats_dlq) retry within it and then fail with a message that says what did not answer.
//
// Patience and ParseJsTime are pure (the clock is injected); ApiRequest is an adapter over nats.c
// that any thread may call while the NatsClient lives.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "common/config.h"
#include "common/nats_client.h"
#include "common/result.h"

namespace platformctl::nats_admin {

// Built on common's types (Result, NatsClient, Headers): used unqualified here.
using namespace common;  // NOLINT(google-build-using-namespace)

// How long a command waits for a cluster that does not answer before it gives up: long enough
// for an election (a node killed or SIGSTOPped), short enough for an operator to wait.
inline constexpr Millis kClusterPatience{30'000};

// Retries with a growing delay (100 ms doubling up to 1 s) until `limit` passed since the last
// progress. One user at a time.
class Patience {
 public:
  using Clock = std::chrono::steady_clock;
  explicit Patience(Millis limit = kClusterPatience,
                    std::function<Clock::time_point()> now = Clock::now);

  // Something answered: the next failure starts a new wait.
  void Progress();
  // The delay before the next try; nullopt when the limit is spent (the delay never runs past
  // it).
  std::optional<Millis> NextDelay();
  // Time since the last progress (or the start).
  Millis waited() const;
  Millis limit() const { return limit_; }

 private:
  Millis limit_;
  std::function<Clock::time_point()> now_;
  Clock::time_point since_;
  int attempt_ = 0;
};

// The kind of a JetStream API error answer: "JetStream system temporarily unavailable" (10008,
// no leader during an election) passes (Retryable); "not found" ones (no message, stream, consumer)
// are NotFound; the rest Permanent. nullopt when `answer` is not an error answer. `what` prefixes
// the message.
std::optional<Error> ApiError(std::string_view answer, const std::string& what);

// One JetStream API request (subject under $JS.API.), its answer's body. A request nobody
// answered within the client's request timeout, "no responders", or a retryable error answer
// is sent again within `patience`; then the error says what did not answer for how long (and
// the server's last asynchronous error, e.g. a permission violation, when there is one).
// An error answer that is not retryable is returned as such.
Result<std::string> ApiRequest(NatsClient& client, const std::string& subject,
                               const std::string& body, const std::string& what,
                               Patience& patience);

// The server's last asynchronous error on this connection (a permission violation shows only
// there: the request is dropped, never answered); empty when there is none.
std::string LastServerError(NatsClient& client);

// A JSON time of JetStream (RFC 3339 with up to nanoseconds and Z or an offset) as unix ns;
// nullopt when it is not one. "0001-01-01T00:00:00Z" (Go's zero time) reads as 0
// (common::ParseRfc3339, the parser of the operator's times too).
std::optional<int64_t> ParseJsTime(std::string_view text);

}  // namespace platformctl::nats_admin
