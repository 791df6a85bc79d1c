#include "platformctl/migrate.h"

#include <algorithm>

#include "common/pg_conn.h"
#include "metricswriter/migrations.h"
#include "platformctl/app.h"

namespace platformctl {

int Migrate(const std::string& database_url, std::ostream& out, std::ostream& err) {
  common::pg::PgConn::Options options;
  options.application_name = "platformctl";
  options.statement_timeout = std::chrono::milliseconds(0);  // a migration may take a while
  auto conn = common::pg::PgConn::Connect(database_url, options);
  if (!conn.ok()) {
    err << "platformctl: cannot reach the database: " << conn.error().message << "\n";
    return kExitNoDatabase;
  }
  const auto migrations = mw::EmbeddedMigrations();
  auto report = mw::ApplyMigrations(**conn, migrations);
  if (!report.ok()) {
    // A connection lost on the way is the database being unreachable; anything else (a
    // read-only database, a failing statement, a changed file) is a failed migration.
    if ((*conn)->Broken()) {
      err << "platformctl: lost the database connection: " << report.error().message << "\n";
      return kExitNoDatabase;
    }
    err << "platformctl: migrate failed: " << report.error().message << "\n";
    return kExitPartial;
  }
  for (int version : report->applied) {
    auto it = std::find_if(migrations.begin(), migrations.end(),
                           [&](const mw::Migration& m) { return m.version == version; });
    out << "applied " << (it != migrations.end() ? it->name : std::to_string(version)) << "\n";
  }
  out << "schema at version " << report->current << ": "
      << (report->applied.empty() ? "already current" : "migrated") << "\n";
  const int known = migrations.empty() ? 0 : migrations.back().version;
  if (report->current > known) {
    out << "note: the database is at version " << report->current
        << ", newer than this platformctl knows (" << known << ")\n";
  }
  return kExitOk;
}

}  // namespace platformctl
