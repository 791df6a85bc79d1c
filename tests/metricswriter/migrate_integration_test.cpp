// `platformctl migrate` against a real PostgreSQL 15: it creates the schema on an empty database,
// a second run changes nothing, the metricswriter starts on the migrated database, and the exit
// codes say what went wrong (2 no DATABASE_URL, 5 database unreachable, 1 migration failed).
#include <catch2/catch.hpp>

#include <string>

#include "metricswriter/migrations.h"
#include "tests/metricswriter/harness.h"

using mwtest::Harness;
using mwtest::kBatches;

namespace {

// Everything the schema consists of: relations, functions and recorded migrations, as one text.
std::string SchemaSnapshot(Harness& h) {
  auto r = h.pg().Query(
      "SELECT coalesce((SELECT string_agg(c.relname || '/' || c.relkind::text, ',' ORDER BY "
      "c.relname) "
      "  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
      "  WHERE n.nspname = 'metrics'), '') || ';' || "
      "coalesce((SELECT string_agg(p.proname, ',' ORDER BY p.proname) FROM pg_proc p "
      "  JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'metrics'), '') || ';' || "
      "coalesce((SELECT string_agg(version || '/' || name || '/' || checksum || '/' || applied_at, "
      "  ',' ORDER BY version) FROM metrics.schema_migrations), '')");
  INFO((r.ok() ? "" : r.error().message));
  REQUIRE(r.ok());
  return std::string(r->Get(0, 0));
}

}  // namespace

TEST_CASE("platformctl migrate creates the schema once and the metricswriter starts on it",
          "[integration]") {
  Harness h;
  CHECK(h.Count("SELECT count(*) FROM pg_namespace WHERE nspname = 'metrics'") == 0);

  std::string out;
  REQUIRE(h.Platformctl("migrate", h.database_url(), &out) == 0);
  INFO(out);
  const auto migrations = mw::EmbeddedMigrations();
  REQUIRE_FALSE(migrations.empty());
  for (const auto& m : migrations) CHECK_THAT(out, Catch::Contains("applied " + m.name));
  CHECK_THAT(out, Catch::Contains("schema at version " + std::to_string(migrations.back().version) +
                                  ": migrated"));
  CHECK(h.Count("SELECT count(*) FROM metrics.schema_migrations") ==
        static_cast<int64_t>(migrations.size()));
  for (const char* table :
       {"metrics.batches", "metrics.series", "metrics.number_points", "metrics.histogram_points",
        "metrics.exp_histogram_points", "metrics.summary_points"}) {
    INFO(table);
    CHECK(h.Count("SELECT count(*) FROM pg_class WHERE oid = to_regclass($1)", {table}) == 1);
  }
  const std::string first = SchemaSnapshot(h);

  // Again: nothing applied, nothing changed (not even the recorded times).
  std::string again;
  REQUIRE(h.Platformctl("migrate", h.database_url(), &again) == 0);
  INFO(again);
  CHECK_THAT(again, Catch::Contains("already current") && !Catch::Contains("applied "));
  CHECK(SchemaSnapshot(h) == first);

  // The writer finds the schema in place, applies nothing and stores.
  auto writer = h.StartWriter(0);
  h.Publish("t1", mwtest::JsonBatch(3, mwtest::NowNs()), "after-migrate");
  REQUIRE(h.WaitCount(kBatches, 1, 15'000) == 1);
  CHECK(h.Count(mwtest::kPoints) == 3);
  // docs/operations.md's example: one tenant's metric over an hour (here the hour around the
  // points).
  CHECK(h.Count("SELECT count(*) FROM (SELECT s.attributes, to_timestamp(p.time_unix_nano / 1e9) "
                "AS time, p.value FROM metrics.series s JOIN metrics.number_points p "
                "USING (series_id) WHERE s.tenant = 't1' AND s.name = 'load' "
                "AND p.time_unix_nano >= extract(epoch FROM now() - interval '30 minutes')::bigint"
                " * 1000000000 AND p.time_unix_nano < extract(epoch FROM now() + interval "
                "'30 minutes')::bigint * 1000000000 ORDER BY s.series_id, p.time_unix_nano) q") ==
        3);
  // It adds day partitions; the recorded migrations stay as they were.
  const std::string after = SchemaSnapshot(h);
  CHECK(after.substr(after.rfind(';')) == first.substr(first.rfind(';')));
  CHECK(h.Count("SELECT count(*) FROM metrics.schema_migrations") ==
        static_cast<int64_t>(migrations.size()));
  std::string log = testsupport::Capture("cat " + h.log_path(0));
  CHECK_THAT(log, !Catch::Contains("applied schema migration"));
}

TEST_CASE("platformctl migrate exit codes: no DATABASE_URL, unreachable, read-only",
          "[integration]") {
  Harness h;
  std::string out;
  CHECK(h.Platformctl("migrate", "", &out) == 2);
  CHECK_THAT(out, Catch::Contains("DATABASE_URL"));

  const int closed = testsupport::FreePortRange(1);
  CHECK(h.Platformctl("migrate", "postgresql://127.0.0.1:" + std::to_string(closed) + "/metrics",
                      &out) == 5);
  CHECK_THAT(out, Catch::Contains("cannot reach the database"));

  REQUIRE(h.pg().Exec("ALTER DATABASE metrics SET default_transaction_read_only = on").ok());
  CHECK(h.Platformctl("migrate", h.database_url(), &out) == 1);
  CHECK_THAT(out, Catch::Contains("migrate failed") && Catch::Contains("SQLSTATE 25006"));
  REQUIRE(h.pg().Exec("ALTER DATABASE metrics RESET default_transaction_read_only").ok());
  CHECK(h.Platformctl("migrate", h.database_url(), &out) == 0);
  CHECK_THAT(out, Catch::Contains("migrated"));
}
