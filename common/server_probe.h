// The version of the nats-server a NatsClient is connected to.
//
// nats.c 3.4 keeps the server's INFO (which names its version) to itself, and JetStream's API
// does not carry the version, so this opens a second, plain TCP connection to the same server,
// reads the INFO line every nats-server sends first (before any TLS upgrade or authentication),
// and closes it without sending anything. A server configured with TLS handshake_first sends
// no INFO before TLS: the probe then fails (the project's role does not set it).
// Adapter (sockets); any thread; blocks for at most `timeout`.
#pragma once

#include <chrono>
#include <string>

#include "common/nats_client.h"
#include "common/result.h"
#include "common/server_version.h"

namespace common {

// Errors: kRetryable when the server cannot be reached or sends no INFO in time, kPermanent
// when its INFO holds no readable version.
Result<server_version::Version> ConnectedServerVersion(const NatsClient& client,
                                                       std::chrono::milliseconds timeout);

// For the services at start: logs "<name>: connected to nats-server <version> at <url>", with a
// warning when it is below the supported range or cannot be read. The services run on whatever
// they find: `platformctl init` is where an older server is refused.
void LogServerVersion(const NatsClient& client, const std::string& name);

}  // namespace common
