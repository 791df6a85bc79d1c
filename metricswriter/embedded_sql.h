// The migrations of sql/migrations, embedded at build time: embed_migrations.cmake generates
// the definitions (migrations_sql.cpp in the build directory), in file name order. Read-only
// static data: any thread may read it.
#pragma once

#include <cstddef>

namespace mw {

struct EmbeddedSql {
  const char* name;  // the file's name, e.g. "0001_metrics_schema.sql"
  const char* sql;   // its text
};
extern const EmbeddedSql kEmbeddedSql[];
extern const size_t kEmbeddedSqlCount;

}  // namespace mw
