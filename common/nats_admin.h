// JetStream administration: read and apply stream settings, read stream and consumer state.
//
// Adapter over nats.c (see nats_client.h); callers see only our own types. Any thread may call
// these while the NatsClient lives; each call is one or more request/replies to the server.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/backlog.h"
#include "common/nats_client.h"
#include "common/result.h"
#include "common/topology.h"

namespace core::nats_admin {

// The stream's settings as the server has them; nullopt when the stream does not exist.
Result<std::optional<topology::StreamSettings>> ReadSettings(NatsClient& client,
                                                             const std::string& stream);

// Creates a stream (or, for settings with a bucket, a KV bucket).
Status Create(NatsClient& client, const topology::StreamSettings& want);

// Applies the updatable fields of `want` onto the existing stream's configuration.
Status Update(NatsClient& client, const topology::StreamSettings& want);

// Messages, bytes, sequences, oldest message time and every consumer's counts, with the time
// the answer came.
Result<backlog::StreamReading> ReadStream(NatsClient& client, const std::string& stream);

// The max payload (headers + payload) of the server this client is connected to, from its INFO.
int64_t MaxPayload(NatsClient& client);

// Names of every stream on the server (KV buckets appear as KV_<bucket>).
Result<std::vector<std::string>> StreamNames(NatsClient& client);

}  // namespace core::nats_admin
