// Dead letters (SPEC §3): the DLQ copy of a message that can never be stored, as data.
//
// Pure: builds the OutMessage; the caller publishes it (PublishSync) and acks the origin only
// after the DLQ stream acknowledged. Safe from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/nats_stream.h"

namespace core::dead_letter {

inline constexpr const char* kReason = "Sa-Dlq-Reason";
inline constexpr const char* kSubject = "Sa-Dlq-Subject";
inline constexpr const char* kStream = "Sa-Dlq-Stream";
inline constexpr const char* kStreamSeq = "Sa-Dlq-Stream-Seq";
inline constexpr const char* kDetail = "Sa-Dlq-Detail";     // e.g. Umami's status and reply
inline constexpr const char* kOrigMsgId = "Sa-Dlq-Msg-Id";  // the origin's Nats-Msg-Id
inline constexpr const char* kReplay = "Sa-Dlq-Replay";     // on a replayed message

struct Origin {
  std::string subject;  // web.events.<site> or api.metrics.<tenant>
  std::string stream;   // WEB_EVENTS or API_METRICS
  uint64_t stream_seq = 0;
  std::string payload;  // unchanged
  Headers headers;      // the origin's headers, kept (Content-Type matters for a replay)
};

// The DLQ subject for an origin subject: web.events.<k> -> dlq.web.<k>, api.metrics.<k> ->
// dlq.api.<k>. Empty when the subject is not one of ours. A key that is not a single valid
// token (empty, or with '.', '*', '>' or white space) becomes "_invalid".
std::string DlqSubjectFor(std::string_view origin_subject);

// The DLQ stream for an origin stream (WEB_EVENTS -> WEB_DLQ, API_METRICS -> API_DLQ).
std::string DlqStreamFor(std::string_view origin_stream);

// reason: one human sentence; detail: optional evidence (status, reply excerpt), kept apart so
// reasons stay countable. The Nats-Msg-Id is derived from stream and sequence, so a crash between
// the DLQ publish and the origin ack cannot make two DLQ copies.
OutMessage Build(const Origin& origin, const std::string& reason, const std::string& detail = "");

}  // namespace core::dead_letter
