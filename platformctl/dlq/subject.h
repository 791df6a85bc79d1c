// Where a replay may publish (docs/contract.md §3.4): one literal subject of the origin stream.
// A dead letter's origin subject is a header value: cut by the dead-lettering when it was too
// long (common/dead_letter.h kTruncatedMark), or written by anyone who may publish to the DLQ. A
// subject nats-server cannot parse (a space splits the publish line) makes it close
// platformctl's connection, so one such message would stop every replay at it; a wildcard would
// be refused by the server too. Such messages are skipped and kept, and --to-subject is checked
// the same way before the run.
//
// Pure: no I/O; safe from any thread.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "common/dead_letter.h"
#include "platformctl/dlq/replay.h"

namespace platformctl::dlq {

// The longest subject a replay publishes to: what the dead-lettering keeps uncut.
inline constexpr size_t kMaxReplaySubjectBytes = common::dead_letter::kMaxSubjectBytes;

// Why `subject` is not one literal subject a replay may publish to, worded to follow "subject"
// ("is cut", "holds a wildcard", ...); nullopt when it is one: 1 to kMaxReplaySubjectBytes bytes,
// tokens separated by '.', none empty, no '*' or '>' anywhere, no byte below 0x21 (white space,
// control characters) nor 0x7f. Bytes from 0x80 up are allowed (UTF-8, as NATS allows).
std::optional<std::string> NotLiteralSubject(std::string_view subject);

// `s` quoted for a report or a terminal: '\\' and every byte outside printable ASCII written as
// \t, \r, \n or \xNN, so nothing from a message can drive the operator's terminal or hide what
// it holds; more than kMaxReplaySubjectBytes bytes are cut, with their count said.
std::string QuotedSubject(std::string_view s);

// Why a dead letter with this origin subject is skipped, for the run's summary ("origin subject
// is cut: 'web.events.abc (truncated)'"); nullopt when the subject is literal (whether it is on
// the origin stream is PlanReplay's next check).
std::optional<std::string> OriginSubjectSkipWhy(std::string_view subject);

// The refusal of --to-subject `to` when it is no literal subject (NotLiteralSubject), which needs
// no server; nullopt when it is one.
std::optional<std::string> ToSubjectLiteralRefusal(std::string_view to,
                                                   std::string_view origin_stream);

// The refusal of --to-subject `to` for a replay to `origin_stream` (as the server has it now,
// nullopt: it does not exist); nullopt when `to` is one literal subject of that stream.
std::optional<std::string> ToSubjectRefusal(std::string_view to, std::string_view origin_stream,
                                            const std::optional<OriginStream>& origin);

}  // namespace platformctl::dlq
