// Message gets of JetStream made by hand, pipelined and retried: the part of the DLQ adapter
// (dlq/nats.h) that StreamBrowser, EraseAll and GetAll share. Internal to
// platformctl/nats_dlq*.cpp.
//
// Adapter over nats.c; any thread may call these while the NatsClient lives.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "platformctl/dlq/nats.h"

namespace platformctl::nats_dlq::detail {

// Built on common's types (Result, NatsClient, Headers): used unqualified here.
using namespace common;  // NOLINT(google-build-using-namespace)

// Requests in flight at once at most.
inline constexpr size_t kMaxWindow = 256;

// Requests to one subject sent together on one reply subscription; those that got no answer
// (or "no responders", or a retryable error answer) are sent again within the cluster
// patience. Answer i: its body (which may be an error answer that is not retryable). tries
// (optional) counts the sends of each.
Result<std::vector<std::string>> RequestAllRetrying(NatsClient& client, const std::string& subject,
                                                    const std::vector<std::string>& bodies,
                                                    Millis timeout, const std::string& what,
                                                    std::vector<int>* tries = nullptr);

// The body of a $JS.API.STREAM.MSG.GET request: by sequence, or the first match at or after it.
std::string GetBody(uint64_t seq, const std::string& next_by_subject);

// A stored message from a message get's answer; nullopt for "no message found".
Result<std::optional<StoredMessage>> ParseGet(const std::string& answer, const std::string& what,
                                              bool keep_data);

// Whether a consumer's create answer (its info, parsed) says it has nothing to deliver: nothing
// pending and nothing delivered. A create whose first answer was lost (a paused or dying leader)
// is answered, when sent again, with the info of the consumer the first one made; that one may
// have delivered every message to the walk's subscription already. Pending 0 then means they are
// on their way, not that there are none: a walk that stopped there listed a DLQ of 60 as empty.
bool NothingToDeliver(const std::string& create_answer);

// The first message matching `filter` at or after `seq`, from the leader.
Result<std::optional<StoredMessage>> GetNext(NatsClient& client, const std::string& stream,
                                             uint64_t seq, const std::string& filter);

// The first sequence from which a walk starting at spec.start_time_ns may begin: never past the
// first matching message stored at or after that time (a binary search over message gets).
Result<uint64_t> FirstSeqAtOrAfter(NatsClient& client, const BrowseSpec& spec, uint64_t lo,
                                   uint64_t last);

}  // namespace platformctl::nats_dlq::detail
