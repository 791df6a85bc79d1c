// SQLSTATE -> ErrorKind: what a PostgreSQL error tells the caller to do.
//
// Pure, no libpq: unit-tested without a server. Safe from any thread.
#pragma once

#include <string_view>

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

}  // namespace common::pg
