// The replayer under faults with a real Umami: outages are waited out, write faults are not
// dead-lettered, kills and restarts lose nothing.
#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <random>
#include <thread>

#include "tests/replayer/fixture.h"
#include "tests/support/wait.h"

using replayer_test::Fixture;
using testsupport::TestEvent;
using namespace std::chrono_literals;

namespace {

void PublishMany(Fixture& f, int count, int visitors, const std::string& prefix, int first = 0) {
  for (int i = first; i < first + count; ++i) {
    TestEvent e;
    e.visitor = i % visitors;
    e.site = f.sites[e.visitor % f.sites.size()];
    e.seq = i / visitors;
    e.id = prefix + std::to_string(i);
    e.url = "/" + prefix + "/" + std::to_string(i);
    f.Publish(e);
  }
}

// Both leave out what Fixture::DirectUmamiCheck sent itself (url /diagnostic).
int64_t Duplicates(Fixture& f) {
  return testsupport::QueryInt(
      f.UmamiDb(),
      "SELECT coalesce(sum(n - 1), 0) FROM (SELECT count(*) AS n FROM website_event WHERE "
      "url_path <> '/diagnostic' GROUP BY url_path HAVING count(*) > 1) d");
}

int64_t Distinct(Fixture& f) {
  return testsupport::QueryInt(
      f.UmamiDb(),
      "SELECT count(DISTINCT url_path) FROM website_event WHERE url_path <> '/diagnostic'");
}

// Failed health checks of Umami process `url` in the replayer's log (a debug line each, and the
// fixture runs it at debug level). While a process is down, the replayer checks it again every
// 2 s: the count is the replayer's own evidence of how long it has been waiting the outage out.
size_t FailedChecks(Fixture& f, const std::string& url) {
  const std::string log = testsupport::ReadFile(f.log_path);
  const std::string line = "health check of " + url + ": failed";
  size_t n = 0;
  for (size_t at = log.find(line); at != std::string::npos; at = log.find(line, at + 1)) ++n;
  return n;
}

// The outage tests run the replayer with a short ack wait, so that an outage of a few ack waits
// proves what a long one would: the events it holds are kept alive by in-progress acks, not
// redelivered, and their failed sends are not counted against them.
constexpr auto kOutageAckWait = 5s;
const std::map<std::string, std::string> kOutageEnv = {{"REPLAYER_ACK_WAIT", "5s"}};
constexpr int kOutageAckWaits = 3;
constexpr size_t kOutageChecks = 5;

// Holds an outage of `url` (already begun) until the replayer has failed kOutageChecks health
// checks of it and kOutageAckWaits ack waits have passed, with nothing dead-lettered at any
// poll. "" when that was so, else what failed.
std::string WaitOutOutage(Fixture& f, const std::string& url) {
  const size_t failed_before = FailedChecks(f, url);
  const auto since = std::chrono::steady_clock::now();
  std::string result = testsupport::WaitKeeping(
      [&] {
        return FailedChecks(f, url) >= failed_before + kOutageChecks &&
               std::chrono::steady_clock::now() - since >= kOutageAckWaits * kOutageAckWait;
      },
      std::to_string(kOutageChecks) + " failed health checks of " + url + " and " +
          std::to_string(kOutageAckWaits) + " ack waits",
      [&] { return f.DlqReasons().empty(); }, "nothing dead-lettered", 300'000, 500);
  WARN("outage held for "
       << std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count() << " s, "
       << FailedChecks(f, url) - failed_before << " failed health checks of " << url);
  return result;
}

}  // namespace

TEST_CASE("Umami down through 3 ack waits: nothing dead-lettered, everything stored once",
          "[integration][umami][replayer]") {
  Fixture f(1, 2);
  f.StartReplayer(kOutageEnv);
  PublishMany(f, 1500, 100, "o");
  REQUIRE(testsupport::WaitFor([&] { return f.StoredEvents() >= 200; }, 60'000));
  f.stack.Stop("umami");
  CHECK(WaitOutOutage(f, f.stack.Env("UMAMI_URLS")) == "");
  CHECK(f.Metric("replayer_umami_process_up{process=\"" + f.stack.Env("UMAMI_URLS") + "\"}") == 0);
  f.stack.Start("umami");
  REQUIRE(f.WaitDrained(180'000));
  CHECK(f.DlqReasons().empty());
  CHECK(Distinct(f) == 1500);
  // Umami's sends are not idempotent: a send it committed but whose answer the stop cut off is
  // sent again. Only the sends under way at the stop can be such (32 per process at most).
  int64_t dups = Duplicates(f);
  WARN("duplicates from sends cut off by stopping Umami: " << dups);
  CHECK(dups <= 32);
  CHECK(f.Metric("replayer_outage_retries_total") > 0);
}

TEST_CASE(
    "Umami's database down through 3 ack waits: nothing dead-lettered, everything stored "
    "once",
    "[integration][umami][replayer]") {
  Fixture f(1, 2);
  f.StartReplayer(kOutageEnv);
  PublishMany(f, 1500, 100, "d");
  REQUIRE(testsupport::WaitFor([&] { return f.StoredEvents() >= 200; }, 60'000));
  f.stack.Stop("pg");
  // Umami answers its heartbeat without the database, not the collection probe: the checks fail.
  CHECK(WaitOutOutage(f, f.stack.Env("UMAMI_URLS")) == "");
  f.stack.Start("pg");
  bool drained = f.WaitDrained(180'000);
  if (!drained && f.DirectUmamiCheck().find("a send 000") != std::string::npos) {
    // Umami itself stuck, not the replayer: its heartbeat answers, a send does not (seen in
    // 2 of 5 fresh-clone runs on 2026-12-01/02, with the test build's Prisma 6 pg adapter; the
    // likeliest cause, not proven: pool clients of transactions whose ROLLBACK failed while the
    // database was away are never released). An operator restarts Umami (docs/operations.md);
    // what this test is about is that the replayer then drains everything once, without
    // dead-lettering.
    WARN("Umami's sends hang after the database came back: restarting Umami");
    f.stack.Stop("umami");
    f.stack.Start("umami");
    drained = f.WaitDrained(180'000);
  }
  REQUIRE(drained);
  CHECK(f.DlqReasons().empty());
  CHECK(Distinct(f) == 1500);
  int64_t dups = Duplicates(f);
  WARN("duplicates from sends cut off by stopping the database: " << dups);
  CHECK(dups <= 32);
  CHECK(f.Metric("replayer_outage_retries_total") > 0);
}

// (Catch 2.13's console reporter loops for ever wrapping the old name of this test,
// "40 events/s from 200 visitors, ...", when it prints its header: keep '/' out of it.)
TEST_CASE(
    "read-only database for 30 s under 40 events per second from 200 visitors: a write fault, "
    "nothing dead-lettered",
    "[integration][umami][replayer]") {
  Fixture f(1, 2);
  f.StartReplayer();
  const std::string admin = f.stack.Env("UMAMI_DATABASE_URL");
  const std::string postgres_db = admin.substr(0, admin.rfind('/')) + "/postgres";
  auto set_read_only = [&](bool on) {
    testsupport::Query(postgres_db, std::string("ALTER DATABASE umami SET "
                                                "default_transaction_read_only = ") +
                                        (on ? "on" : "off"));
    // Umami's pooled connections keep the old setting: end them so new ones take it.
    testsupport::Query(postgres_db,
                       "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity WHERE "
                       "datname = 'umami' AND pid <> pg_backend_pid()");
  };
  // A steady 40 events/s from 200 visitors: 20 s healthy, 30 s read-only, 20 s writable again.
  // The rule must hold whatever the traffic before the fault (the rule this replaced compared
  // the failures with the stores of the busy minute before it). The write fault is seen within
  // a few seconds of the first refusals; 60 s phases (until 2026-12-07) cost the run 110 s more
  // and proved nothing the shorter ones do not.
  int published = 0;
  auto run = [&](std::chrono::seconds how_long) {
    auto start = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - start < how_long) {
      PublishMany(f, 4, 200, "w", published);
      published += 4;
      std::this_thread::sleep_for(100ms);  // the traffic's pace (40 events/s), not a wait
    }
  };
  run(20s);
  set_read_only(true);
  run(30s);
  CHECK(f.DlqReasons().empty());
  CHECK(f.Metric("replayer_write_fault_retries_total") > 0);
  set_read_only(false);
  run(20s);
  REQUIRE(f.WaitDrained(180'000));
  CHECK(f.DlqReasons().empty());
  CHECK(Distinct(f) == published);
  // Sends under way when the fault began may have been answered 500 after their row was
  // written (Umami writes an event with several statements): those are the only duplicates.
  int64_t dups = Duplicates(f);
  WARN("published " << published << ", duplicates " << dups << ", write-fault retries "
                    << f.Metric("replayer_write_fault_retries_total"));
  CHECK(dups == 0);
}

TEST_CASE("kill -9 at 10 random moments: every event stored, duplicates bounded",
          "[integration][umami][replayer]") {
  Fixture f(1, 2);
  constexpr int kEvents = 5000;
  const std::map<std::string, std::string> env = {{"REPLAYER_ACK_WAIT", "5s"}};
  PublishMany(f, kEvents, 200, "k");
  f.StartReplayer(env);
  std::mt19937 gen(std::random_device{}());
  std::uniform_int_distribution<int> pause_ms(2000, 9000);
  int kills = 0;
  double in_flight_at_kills = 0;
  for (; kills < 10 && f.StoredEvents() < kEvents - 500; ++kills) {
    // The fault itself: a kill at a random moment of the run, not a wait for anything.
    std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms(gen)));
    in_flight_at_kills += f.Metric("replayer_sends_in_flight");
    f.KillReplayer();
    f.StartReplayer(env);
  }
  REQUIRE(f.WaitDrained(300'000));
  int64_t dups = Duplicates(f);
  // How often a kill fell inside a redelivery's marked window (the crash-loop guard's marker
  // written, not yet deleted): each such event is read again once, under a marker counting it.
  const std::string window = testsupport::Capture(
      "grep -c 'was being read by another process that stopped' " + f.log_path);
  WARN("kills: " << kills << ", duplicates found in Umami: " << dups
                 << ", sends in flight at the kills (last gauge reading): " << in_flight_at_kills
                 << ", events read again after a kill in their marked window: " << window);
  CHECK(kills >= 5);
  CHECK(Distinct(f) == kEvents);
  CHECK(f.DlqReasons().empty());
  // A duplicate can only come from a send Umami answered before the guard was written.
  CHECK(dups <= static_cast<int64_t>(kills) * 32);
}

TEST_CASE("two Umami processes, one killed: the other carries every send",
          "[integration][umami][replayer]") {
  Fixture f(2, 2);
  f.StartReplayer();
  PublishMany(f, 2000, 100, "t");
  REQUIRE(testsupport::WaitFor([&] { return f.StoredEvents() >= 300; }, 60'000));
  f.stack.Kill("umami-1");
  REQUIRE(f.WaitDrained(180'000));
  CHECK(f.DlqReasons().empty());
  CHECK(Distinct(f) == 2000);
  std::string first = f.stack.Env("UMAMI_URLS").substr(0, f.stack.Env("UMAMI_URLS").find(','));
  CHECK(f.Metric("replayer_umami_process_up{process=\"" + first + "\"}") == 0);
  // Duplicates only from the sends cut off by the kill, if Umami had committed them.
  CHECK(Duplicates(f) <= 32);
}

TEST_CASE("SIGTERM: stops fetching, releases what it holds, exits 0, nothing lost",
          "[integration][umami][replayer]") {
  Fixture f(1, 2);
  // A long ack wait: a held message back within seconds can only have been released (nak).
  const std::map<std::string, std::string> env = {{"REPLAYER_ACK_WAIT", "120s"}};
  f.StartReplayer(env);
  PublishMany(f, 2000, 100, "s");
  REQUIRE(testsupport::WaitFor([&] { return f.StoredEvents() >= 300; }, 60'000));
  auto t0 = std::chrono::steady_clock::now();
  CHECK(f.StopReplayer(30'000) == 0);
  const double stop_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(stop_s < 30);
  // The unacked count once it holds still: nats-server 2.10+ queues the acks it receives and
  // applies them on the consumer's own goroutine, so a reading taken the moment the process
  // is gone can still count the last acks it sent (on a loaded machine: a burst, as the
  // coalescing ack connection is flushed at the end). Nothing else moves it while no replayer
  // runs: nothing pulls, and the ack wait (120 s) is far off.
  uint64_t held_at_stop = 0;
  auto changed = std::chrono::steady_clock::now();
  const bool still = testsupport::WaitFor(
      [&] {
        auto web = f.Read("WEB_EVENTS");
        if (web.consumers.size() != 1) return false;
        const auto now = std::chrono::steady_clock::now();
        if (web.consumers[0].unacked != held_at_stop) {
          held_at_stop = web.consumers[0].unacked;
          changed = now;
        }
        return now - changed >= 1s;
      },
      15'000);
  CHECK(still);
  CHECK(held_at_stop > 0);
  f.StartReplayer(env);
  // Released, they are back long before their 120 s ack wait. Not within a fixed few seconds:
  // each redelivery is read under the crash-loop guard (a marker written and removed in KV)
  // and the count rises only once a fetched batch is read (the fresh-clone run of c86fdd2, on
  // a loaded machine, had not counted them all after 15 s). Two fresh-clone runs on a loaded
  // machine counted 768 of 867 after 60 s, with 99 unacked, delivered once, held by nobody:
  // messages the first replayer had been delivered and never handed back (see Engine::Run).
  const auto t1 = std::chrono::steady_clock::now();
  const bool back = testsupport::WaitFor(
      [&] {
        return f.Metric("replayer_redeliveries_received_total") >=
               static_cast<double>(held_at_stop);
      },
      60'000);
  const auto web = f.Read("WEB_EVENTS");
  WARN("stopped in " << stop_s << " s, held at the stop " << held_at_stop
                     << ", redeliveries counted "
                     << f.Metric("replayer_redeliveries_received_total") << " after "
                     << std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count()
                     << " s; fetched " << f.Metric("replayer_messages_fetched_total")
                     << ", held now " << f.Metric("replayer_held_messages") << ", stored "
                     << f.StoredEvents() << "; the consumer now: unacked "
                     << (web.consumers.empty() ? 0 : web.consumers[0].unacked) << ", redelivered "
                     << (web.consumers.empty() ? 0 : web.consumers[0].redelivered) << ", pending "
                     << (web.consumers.empty() ? 0 : web.consumers[0].pending));
  if (!back) {
    // What the first replayer said about its stop: what it released, and when.
    WARN(testsupport::Capture("grep -E 'stopping|released|left [0-9]|releasing|flushing|fetch' " +
                              f.log_path + " | cut -c1-300 | head -n 40"));
  }
  CHECK(back);
  REQUIRE(f.WaitDrained(180'000));
  CHECK(Distinct(f) == 2000);
  CHECK(Duplicates(f) == 0);
  CHECK(f.DlqReasons().empty());
}

TEST_CASE(
    "paused past the ack wait: the redeliveries of held events are neither sent nor held twice",
    "[integration][umami][replayer]") {
  Fixture f(1, 2);
  // No in-progress acks while it is stopped: every held message's ack wait runs out, and the
  // server delivers all of them again to the same replayer once it runs.
  const std::map<std::string, std::string> env = {{"REPLAYER_ACK_WAIT", "3s"}};
  PublishMany(f, 3000, 300, "w");
  f.StartReplayer(env);
  REQUIRE(testsupport::WaitFor([&] { return f.StoredEvents() >= 300; }, 60'000));
  f.replayer->Signal(SIGSTOP);
  // The fault itself: stopped for two ack waits (3 s each), so every held message's ack wait runs
  // out (nothing in the stopped process can be waited on).
  std::this_thread::sleep_for(6s);
  f.replayer->Signal(SIGCONT);
  REQUIRE(testsupport::WaitFor([&] { return f.Metric("replayer_redeliveries_received_total") > 0; },
                               30'000));
  // A redelivery counted as one more held message would shrink the room to fetch into for
  // good: the replayer would stop fetching and never drain.
  REQUIRE(f.WaitDrained(240'000));
  CHECK(testsupport::WaitFor([&] { return f.Metric("replayer_held_messages") == 0; }, 5'000));
  CHECK(Distinct(f) == 3000);
  CHECK(f.DlqReasons().empty());
  int64_t dups = Duplicates(f);
  WARN("redeliveries " << f.Metric("replayer_redeliveries_received_total") << ", skipped as stored "
                       << f.Metric("replayer_duplicates_skipped_total") << ", duplicates in Umami "
                       << dups);
  CHECK(dups == 0);
}
