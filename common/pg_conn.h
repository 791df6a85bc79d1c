// A PostgreSQL connection over libpq, with every call returning Result/Status.
//
// Adapter: pg_conn.cpp is the only file that includes libpq. Errors carry the SQLSTATE as a field
// (Error::sqlstate, read by SqlStateOf; never parsed back out of the words), in their message for
// the operator ("SQLSTATE 25006: cannot execute INSERT in a read-only transaction") and a kind
// from ClassifySqlState (pg_error.h).
// Ownership: PgConn owns its PGconn and closes it in the destructor; PgResult owns its PGresult.
// Thread-safety: a PgConn is used by one thread at a time (libpq connections are not shared).
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

typedef struct pg_conn PGconn;
typedef struct pg_result PGresult;

namespace common::pg {

// The SQLSTATE of an Error made here, or "" when it did not come from the server.
std::string SqlStateOf(const Error& e);

class PgResult {
 public:
  explicit PgResult(PGresult* r);  // takes ownership
  ~PgResult();
  PgResult(PgResult&& o) noexcept;
  PgResult& operator=(PgResult&& o) noexcept;
  PgResult(const PgResult&) = delete;
  PgResult& operator=(const PgResult&) = delete;

  int rows() const;
  int columns() const;
  bool IsNull(int row, int col) const;
  std::string_view Get(int row, int col) const;  // text format; binary when asked for binary

 private:
  PGresult* r_ = nullptr;
};

// A parameter in text format; nullopt is SQL NULL.
using Param = std::optional<std::string>;

class PgConn {
 public:
  struct Options {
    std::string application_name = "core";
    std::chrono::seconds connect_timeout{5};
    // Also the longest a transaction may sit idle (idle_in_transaction_session_timeout).
    std::chrono::milliseconds statement_timeout{60'000};  // 0 = server default
  };

  // conninfo: a libpq connection string or URL (DATABASE_URL).
  static Result<std::unique_ptr<PgConn>> Connect(const std::string& conninfo,
                                                 const Options& options);
  ~PgConn();
  PgConn(const PgConn&) = delete;
  PgConn& operator=(const PgConn&) = delete;

  // Runs one or more statements with no parameters (BEGIN, COMMIT, DDL, a migration file).
  Status Exec(const std::string& sql);
  // One statement with text parameters ($1...); result rows in text format.
  Result<PgResult> Query(const std::string& sql, const std::vector<Param>& params = {});
  // COPY ... FROM STDIN with the whole payload in `data` (text or binary, as the statement says).
  Status CopyIn(const std::string& copy_sql, std::string_view data);

  // False once libpq saw the connection break; the owner drops it and connects again.
  bool Broken() const;

 private:
  PgConn() = default;
  Error ErrorFrom(const PGresult* r, const std::string& what) const;
  PGconn* conn_ = nullptr;  // owned
  // What would give the connection string's password away (pg_error.h ConninfoSecrets):
  // scrubbed from every error this connection reports.
  std::vector<std::string> secrets_;
};

}  // namespace common::pg
