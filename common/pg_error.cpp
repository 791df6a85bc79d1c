#include "common/pg_error.h"

namespace common::pg {

ErrorKind ClassifySqlState(std::string_view s) {
  if (s.size() != 5) return ErrorKind::kRetryable;  // no server answer: connection lost
  std::string_view cls = s.substr(0, 2);
  if (cls == "22" || cls == "23" || s == "54000") return ErrorKind::kInvalid;
  if (cls == "08" ||   // connection exception
      cls == "53" ||   // insufficient resources: disk full, out of memory, too many connections
      cls == "57" ||   // operator intervention: admin/crash shutdown, cannot connect now, canceled
      cls == "58" ||   // system error: I/O error
      cls == "40" ||   // transaction rollback: serialization failure, deadlock
      s == "25006" ||  // read-only SQL transaction (a read-only database or a standby)
      s == "55P03" ||  // lock not available
      s == "55006" ||  // object in use
      s == "XX000") {  // internal error: seen transiently during crash recovery
    return ErrorKind::kRetryable;
  }
  return ErrorKind::kPermanent;
}

}  // namespace common::pg
