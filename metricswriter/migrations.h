// The schema migrations of sql/migrations/, embedded in the binary at build time, and the runner
// that applies them (at the metricswriter's start; `platformctl migrate` can call the same).
//
// Each pending file runs in its own transaction together with its row in
// metrics.schema_migrations (version, name, checksum), under the session advisory lock
// hashtext('metrics.migrations'): two writers starting at once apply each file once. An applied
// file whose checksum changed stops the start (edit by adding a version, never in place).
// Thread-safety: the caller owns the connection; call from one thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/pg_conn.h"
#include "common/result.h"

namespace mw {

struct Migration {
  int version = 0;
  std::string name;  // file name, e.g. 0001_metrics_schema.sql
  std::string_view sql;
};

// Every file of sql/migrations/, ordered by version (the NNNN file name prefix).
std::vector<Migration> EmbeddedMigrations();

// Hex checksum of a migration's text.
std::string MigrationChecksum(std::string_view sql);

struct MigrationReport {
  std::vector<int> applied;  // versions applied by this call
  int current = 0;           // the highest version now in place
};

common::Result<MigrationReport> ApplyMigrations(common::pg::PgConn& conn,
                                                const std::vector<Migration>& migrations);

}  // namespace mw
