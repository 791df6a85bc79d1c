// SQLSTATE -> ErrorKind: what a PostgreSQL error tells the caller to do; and libpq's messages
// scrubbed of a connection string's secrets.
//
// Pure, no libpq: unit-tested without a server. Safe from any thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace common::pg {

// kRetryable: the server is down, restarting, read-only, out of disk or connections, or the
//   statement lost a race (serialization, deadlock, timeout): the same work may succeed later.
// kInvalid: the server rejected the data itself (class 22 data exception, class 23 integrity
//   constraint, 54000 program limit such as an oversized value): retrying the same rows cannot
//   help, so the caller isolates and sets them aside.
// kPermanent: anything else (undefined table, syntax, permission): a bug or an operator's fix
//   is needed. Empty sqlstate (no server answer) is retryable: the connection broke.
ErrorKind ClassifySqlState(std::string_view sqlstate);

// libpq repeats parts of a connection string in its messages ('invalid percent-encoded token:
// "pa%ZZss"', a host name holding half a password with a raw '@'), and those messages reach our
// logs and stderr. Nothing derived from a libpq error may carry the password, so each is passed
// through ScrubSecrets with what ConninfoSecrets found.
//
// The strings that would give the password away: `parsed_password` (PQconninfoParse's value,
// "" when none or unparsable), the raw password of a URL's userinfo (and its '@'-separated
// pieces, for a password holding a raw '@'), the raw value of every `password=` (key/value form
// or URL query), and the whole conninfo when it holds any of them. Longest first, no empties.
std::vector<std::string> ConninfoSecrets(std::string_view conninfo,
                                         std::string_view parsed_password);

// `text` with every occurrence of each secret replaced by "***".
std::string ScrubSecrets(std::string_view text, const std::vector<std::string>& secrets);

// The message for a conninfo libpq cannot parse: "DATABASE_URL cannot be parsed: " + libpq's
// reason, every double-quoted value in it (libpq quotes the part it refused) replaced by "***"
// and the secrets scrubbed. One line.
std::string UnparsableConninfo(std::string_view reason, const std::vector<std::string>& secrets);

}  // namespace common::pg
