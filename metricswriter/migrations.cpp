#include "metricswriter/migrations.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "metricswriter/embedded_sql.h"
#include "metricswriter/fingerprint.h"

namespace mw {

std::vector<Migration> EmbeddedMigrations() {
  std::vector<Migration> out;
  for (size_t i = 0; i < kEmbeddedSqlCount; ++i) {
    Migration m;
    m.name = kEmbeddedSql[i].name;
    m.version = std::atoi(m.name.c_str());
    m.sql = kEmbeddedSql[i].sql;
    out.push_back(std::move(m));
  }
  std::sort(out.begin(), out.end(),
            [](const Migration& a, const Migration& b) { return a.version < b.version; });
  return out;
}

std::string MigrationChecksum(std::string_view sql) {
  Fingerprint f = Murmur3x64_128(sql);
  char buf[33];
  std::snprintf(buf, sizeof(buf), "%016llx%016llx", static_cast<unsigned long long>(f.hi),
                static_cast<unsigned long long>(f.lo));
  return buf;
}

namespace {

common::Result<MigrationReport> ApplyLocked(common::pg::PgConn& conn,
                                            const std::vector<Migration>& migrations) {
  if (auto s = conn.Exec("CREATE SCHEMA IF NOT EXISTS metrics;"
                         "CREATE TABLE IF NOT EXISTS metrics.schema_migrations ("
                         " version integer PRIMARY KEY, name text NOT NULL, checksum text NOT NULL,"
                         " applied_at timestamptz NOT NULL DEFAULT now())");
      !s.ok()) {
    return s.error();
  }
  auto rows = conn.Query("SELECT version, checksum FROM metrics.schema_migrations");
  if (!rows.ok()) return rows.error();
  std::map<int, std::string> applied;
  for (int r = 0; r < rows->rows(); ++r) {
    applied[std::atoi(std::string(rows->Get(r, 0)).c_str())] = std::string(rows->Get(r, 1));
  }
  MigrationReport report;
  for (const auto& m : migrations) {
    std::string sum = MigrationChecksum(m.sql);
    if (auto it = applied.find(m.version); it != applied.end()) {
      if (it->second != sum) {
        return common::Error::Permanent("migration " + m.name +
                                        " was changed after it was applied (checksum " + sum +
                                        ", recorded " + it->second + ")");
      }
      report.current = std::max(report.current, m.version);
      continue;
    }
    if (auto s = conn.Exec("BEGIN"); !s.ok()) return s.error();
    common::Status st = conn.Exec(std::string(m.sql));
    if (st.ok()) {
      auto ins = conn.Query(
          "INSERT INTO metrics.schema_migrations (version, name, checksum) VALUES ($1, $2, $3)",
          {std::to_string(m.version), m.name, sum});
      if (!ins.ok()) st = ins.error();
    }
    if (st.ok()) st = conn.Exec("COMMIT");
    if (!st.ok()) {
      (void)conn.Exec("ROLLBACK");
      return common::Error{st.error().kind, "migration " + m.name + ": " + st.error().message};
    }
    report.applied.push_back(m.version);
    report.current = std::max(report.current, m.version);
  }
  for (const auto& [version, sum] : applied) report.current = std::max(report.current, version);
  return report;
}

}  // namespace

common::Result<MigrationReport> ApplyMigrations(common::pg::PgConn& conn,
                                                const std::vector<Migration>& migrations) {
  if (auto s = conn.Exec("SELECT pg_advisory_lock(hashtext('metrics.migrations'))"); !s.ok()) {
    return s.error();
  }
  auto result = ApplyLocked(conn, migrations);
  (void)conn.Exec("SELECT pg_advisory_unlock(hashtext('metrics.migrations'))");
  return result;
}

}  // namespace mw
