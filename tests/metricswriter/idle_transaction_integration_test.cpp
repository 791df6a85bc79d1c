// A transaction its client abandoned does not hold its row locks past the statement timeout
// (common/pg_conn: idle_in_transaction_session_timeout = statement_timeout). The soak on
// nats-server 2.15.1 found the case: a metricswriter's connection went half-open on a lossy
// link in the middle of its INSERT's transaction; PostgreSQL kept the session "idle in
// transaction" with the batches' rows locked, and every later INSERT of those batches (their
// redeliveries, by the next leader) waited on it until its statement timeout, for 54 minutes.
// Here the abandoned client is a connection that stops talking after its INSERT, which the
// server cannot tell from a vanished one.
#include <catch2/catch.hpp>

#include <chrono>
#include <string>

#include "common/pg_conn.h"
#include "tests/metricswriter/harness.h"

using common::pg::PgConn;

TEST_CASE("a transaction its writer abandoned frees its rows after the statement timeout",
          "[integration][pg]") {
  mwtest::Harness h;
  PgConn::Options quick;
  quick.application_name = "abandoned";
  quick.statement_timeout = std::chrono::milliseconds(1'000);
  auto abandoned = PgConn::Connect(h.database_url(), quick);
  REQUIRE(abandoned.ok());
  REQUIRE((*abandoned)->Exec("CREATE TABLE IF NOT EXISTS idle_locks (k text PRIMARY KEY)").ok());
  REQUIRE((*abandoned)->Exec("BEGIN; INSERT INTO idle_locks VALUES ('batch-1')").ok());
  // The abandoned writer says nothing more. The next writer inserts the same key: it waits on
  // the first one's row lock until the server ends that transaction (1 s idle), well within its
  // own 10 s statement timeout; without the idle bound it would wait out those 10 s and fail.
  PgConn::Options next_options;
  next_options.application_name = "next";
  next_options.statement_timeout = std::chrono::milliseconds(10'000);
  auto next = PgConn::Connect(h.database_url(), next_options);
  REQUIRE(next.ok());
  const auto began = std::chrono::steady_clock::now();
  auto ins = (*next)->Query(
      "INSERT INTO idle_locks VALUES ('batch-1') ON CONFLICT DO NOTHING RETURNING k");
  const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::steady_clock::now() - began)
                          .count();
  INFO("the next writer waited " << waited << " ms"
                                 << (ins.ok() ? "" : ": " + ins.error().message));
  REQUIRE(ins.ok());
  CHECK(ins->rows() == 1);  // the abandoned insert was rolled back: the next one stored it
  CHECK(waited < 9'000);
  // The abandoned connection was ended by the server: its next statement fails.
  CHECK_FALSE((*abandoned)->Exec("COMMIT").ok());
  CHECK(h.Count("SELECT count(*) FROM idle_locks") == 1);
}
