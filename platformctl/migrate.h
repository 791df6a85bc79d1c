// platformctl migrate: applies the metrics schema (sql/migrations/, embedded in the binary at
// build time) to the database DATABASE_URL names, the same way the metricswriter does at start:
// under the advisory lock, each pending file in its own transaction, recorded in
// metrics.schema_migrations. A second run changes nothing and says so.
//
// Single-threaded: called from platformctl's main thread.
#pragma once

#include <ostream>
#include <string>

namespace platformctl {

// Exit code when the database cannot be reached (3 is NATS's). Other codes as in app.h:
// 0 applied or already current, 1 a migration failed (those before it stay applied),
// 2 usage or configuration error (DATABASE_URL missing).
inline constexpr int kExitNoDatabase = 5;

// Connects to `database_url`, applies what is pending and prints one line per applied version
// and a summary to `out` ("schema at version N: applied 0001_metrics_schema.sql" or
// "schema at version N: already current"); errors go to `err`. Returns the exit code.
int Migrate(const std::string& database_url, std::ostream& out, std::ostream& err);

}  // namespace platformctl
