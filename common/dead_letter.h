// Dead letters (docs/contract.md §3.3): the DLQ copy of a message that can never be stored, as
// data.
//
// Pure: builds the OutMessage; the caller publishes it (PublishSync) and acks the origin only
// after the DLQ stream acknowledged. Safe from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/message.h"

namespace common::dead_letter {

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

// What Build() writes is bounded, so that a DLQ copy is never more than kHeaderRoom bytes larger
// than its origin message as nats-server counts sizes: the header block plus the payload, both
// for the server's max_payload (checked on every publish, nats.c checks it too) and for a
// stream's max_msg_size. platformctl init gives the work-queue streams a max_msg_size of the
// server's max payload less kHeaderRoom, so a message that could not be dead-lettered is refused
// when the edge publishes it. Values longer than their bound are cut at a UTF-8 boundary;
// Sa-Dlq-Subject, when cut, ends in kTruncatedMark (a space: no longer a subject, so a replay
// refuses it instead of publishing to a wrong one).
inline constexpr size_t kMaxReasonBytes = 256;   // Sa-Dlq-Reason
inline constexpr size_t kMaxDetailBytes = 512;   // Sa-Dlq-Detail
inline constexpr size_t kMaxSubjectBytes = 256;  // Sa-Dlq-Subject
inline constexpr size_t kMaxStreamBytes = 64;    // Sa-Dlq-Stream and the stream in Nats-Msg-Id
// Origin headers copied besides its Nats-Msg-Id (the first one, renamed Sa-Dlq-Msg-Id); Nats-*
// and Sa-Dlq-* ones are never copied. Each copied line may come out one byte longer than the
// origin spelled it ("K:v" is written "K: v").
inline constexpr size_t kMaxCopiedHeaders = 16;
inline constexpr const char* kTruncatedMark = " (truncated)";
inline constexpr int64_t kHeaderRoom = 2048;

// reason: one human sentence; detail: optional evidence (status, reply excerpt), kept apart so
// reasons stay countable. The Nats-Msg-Id is derived from stream and sequence, so a crash between
// the DLQ publish and the origin ack cannot make two DLQ copies.
OutMessage Build(const Origin& origin, const std::string& reason, const std::string& detail = "");

// The size nats-server counts for a message as nats.c publishes it: the header block
// ("NATS/1.0\r\n", "Key: value\r\n" per value, "\r\n"; none without headers) with the Nats-Msg-Id
// and Nats-Expected-Stream headers msg_id and expect_stream become, plus the payload.
int64_t PublishedSize(const OutMessage& m);
// The same for a message as it was received: its headers as given, plus the payload.
int64_t ReceivedSize(const Headers& headers, size_t payload_bytes);

// The largest number of bytes by which Build() can exceed its origin (ReceivedSize of the
// origin's headers and payload), from the bounds above; at most kHeaderRoom.
int64_t MaxGrowth();

// The DLQ copy's own Nats-Msg-Id as Build() writes it: "dlq.<origin stream>.<origin seq>".
std::string DlqMsgId(std::string_view origin_stream, uint64_t origin_seq);
// Whether a DLQ copy's own Nats-Msg-Id has DlqMsgId()'s shape. The system this one replaces
// wrote the origin's own id there instead (and no Sa-Dlq-Msg-Id), which replay must keep.
bool IsDlqMsgId(std::string_view id);

}  // namespace common::dead_letter
