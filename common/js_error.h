// JetStream's refusals as data: which err_code numbers mean what to us, read without I/O.
//
// A JetStream answer that refuses carries {"error":{"code":C,"err_code":E,...}}: C is an HTTP-like
// status, E the server's own number (nats-server's server/errors.json). We judge by these
// numbers, never by the description. Pure: safe from any thread.
#pragma once

#include "common/result.h"

namespace common::js_error {

// err_code numbers (nats-server server/errors.json).
constexpr int kMessageTooLarge = 10054;  // "message size exceeds maximum allowed"
constexpr int kStoreFailed = 10077;  // storing failed, e.g. "maximum bytes exceeded" (discard new)
constexpr int kClusterNotAvailable = 10008;    // "JetStream system temporarily unavailable"
constexpr int kStreamTooManyRequests = 10167;  // 429 "too many requests" (2.11+: ingest queue)
constexpr int kAtomicPublishTooManyInflight = 10210;  // 429 (2.12+)
constexpr int kBatchPublishTooManyInflight = 10211;   // 429 (2.12+)
constexpr int kWrongLastSequence = 10071;             // a KV create or update on a stale revision
constexpr int kPeerRemapFailed = 10075;        // no other server can take a removed peer's place
constexpr int kStorageExceeded = 10047;        // the account's JetStream storage is used up
constexpr int kInsufficientResources = 10023;  // the servers lack room for the stream
constexpr int kStreamNotFound = 10059;
constexpr int kConsumerNotFound = 10014;
constexpr int kNoMessageFound = 10037;
// A message delete of what the stream does not hold (nats-server 2.9.10, 2.10.27 and 2.15.1
// alike): 10057 (HTTP 500, the store's reason as the description) below the stream's first
// sequence ("no message found") or past its last ("stream store EOF"), and for other store
// failures; 10043 (400, "sequence N not found") for one deleted inside it.
constexpr int kStreamMsgDeleteFailed = 10057;
constexpr int kSequenceNotFound = 10043;
constexpr int kTooManyRequestsStatus = 429;

// Whether the server refused because it is busy: nats-server 2.11+ answers a publish with 429
// ("too many requests", err_code 10167) when a stream's ingest queue is full, and the batch
// publishes with 10210/10211. The same message succeeds later: a retry, not a refusal.
// `status` is the answer's "code" (0 when unknown, e.g. nats.c gives only err_code).
bool IsTooManyRequests(int status, int err_code);

// What the caller should do with a refusal: kRetryable for a busy server (above), an election
// under way (10008) or a 503 without an err_code, kNotFound for a missing stream, consumer or
// message (or a 404), else kPermanent (other 503s, e.g. 10075, answer the request itself).
ErrorKind KindOf(int status, int err_code);

}  // namespace common::js_error
