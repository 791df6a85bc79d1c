// The checks a message passes before it is decoded: its batch id (Nats-Msg-Id), its tenant (the
// subject) and its content type. Pure; safe from any thread.
//
// A valid batch id, after removing every trailing replay suffix `.replay.<stream>.<seq>`
// (docs/contract.md §3.4: a replay from a dead-letter stream appends one, a replay of a replay
// two), is 1 to 128 characters from A-Z a-z 0-9 and - _ . : + / = @ ~. A UUID, a ULID, a hex or
// base64 digest and
// "<edge>:<counter>" all fit; white space, quotes, backslashes and control characters do not.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"

namespace mw {

inline constexpr size_t kMaxBatchIdLength = 128;

// The batch id for a message id; Error (invalid) says why not.
common::Result<std::string> BatchIdFromMsgId(const std::optional<std::string>& msg_id);

// The tenant of `api.metrics.<tenant>`; Error (invalid) when the subject is not one.
common::Result<std::string> TenantFromSubject(std::string_view subject);

enum class Format { kJson, kProtobuf };

// From Content-Type (parameters such as "; charset=utf-8" ignored, case-insensitive); when the
// header is absent or empty the body is sniffed: JSON starts with '{' after white space.
common::Result<Format> FormatOf(const std::optional<std::string>& content_type,
                                std::string_view body);

}  // namespace mw
