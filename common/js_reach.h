// Whether the JetStream behind this connection still answers, and when to leave its server.
//
// A NATS node cut off from the other two (a minority) still answers pings, so nats.c keeps the
// connection, but JetStream there has no quorum: every stream and KV request goes unanswered.
// A service on that node would wait for it to heal (docs/operations.md, "Network partitions").
// The lease keeper feeds this watch with the outcome of every request it makes to the `locks`
// bucket (one a second at least): once JetStream has answered nothing for `limit` (the lease
// TTL) while the connection stood, the service moves: it drops its work, closes the connection
// and connects again with this server last (NatsClient::Options::avoid_url). With the TTL as
// the limit, a pair of services on the minority node leads again from a majority node within
// two TTLs of the cut: one to notice, one for the old lease to expire.
//
// An answer of any kind counts as an answer (a create refused because another instance holds
// the lease is JetStream working). Time while the connection is down does not count: nats.c
// reconnects by itself, and a new server gets a fresh `limit`.
//
// A plain value class driven by one thread with an injected clock.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace common {

class JetStreamReach {
 public:
  using Clock = std::chrono::steady_clock;
  explicit JetStreamReach(std::chrono::milliseconds limit) : limit_(limit) {}

  void Answered(Clock::time_point now);
  // A request JetStream left unanswered (timeout, no responders, "temporarily unavailable")
  // while the connection stood.
  // `sent`: when the request went out (the silence began then at the latest).
  void Unanswered(Clock::time_point sent);
  // The connection is down (nats.c reconnects): the count restarts at the next request.
  void Disconnected();

  // JetStream has answered nothing for at least the limit while connected.
  bool Lost(Clock::time_point now) const;
  // How long it has been silent (0 while it answers).
  std::chrono::milliseconds SilentFor(Clock::time_point now) const;
  std::chrono::milliseconds limit() const { return limit_; }

 private:
  std::chrono::milliseconds limit_;
  Clock::time_point silent_since_{};  // first unanswered request since the last answer; {}: none
};

// The server list for a new connection that leaves `avoid` (a URL the last connection used)
// for last: the others in an order drawn from `seed` (spreading services over the nodes, as
// nats.c's own randomizing does), then every URL naming the same host and port as `avoid`.
// URLs are compared by host and port, without scheme or user info ("nats://u:p@n1:4222" and
// "tls://n1:4222" are the same server). An empty `avoid` only shuffles.
std::vector<std::string> ServersAvoiding(const std::vector<std::string>& urls,
                                         std::string_view avoid, uint64_t seed);

}  // namespace common
