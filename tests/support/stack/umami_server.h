// Test support: Umami processes (node $UMAMI_HOME/app/server.js, the cached build of
// scripts/umami-build) on a test's PostgreSQL, as scripts/stack runs them.
//
// An UmamiServer owns one node process, its log <dir>/umami-<i>.log and its port (the OS's pick
// at the first start, kept for every later Start: UMAMI_URLS stays true). Its environment is
// scripts/stack's env -i set (PATH, HOME, LANG, TZ, NODE_ENV, PORT, HOSTNAME, DATABASE_URL,
// APP_SECRET, the telemetry and update switches) plus STACK_UMAMI_ENV ("K=V K=V") when set.
// Start waits for /api/heartbeat and then pays the first /api/send's compile time with a send for
// a website that cannot exist (unless STACK_UMAMI_WARMUP=0). ApplyUmamiMigrations makes the
// schema once. Nothing here builds Umami: a missing server.js is an error naming
// scripts/umami-build.
//
// Not thread-safe: the test's main thread starts and stops it.
#pragma once

#include <sys/types.h>

#include <string>

#include "tests/support/stack/pg_server.h"
#include "tests/support/stack/process.h"

namespace testsupport::stack {

// $UMAMI_HOME (else <repo>/.cache/umami, as scripts/lib/common.sh); throws when app/server.js is
// not there.
std::string UmamiHome(const std::string& source_dir);

// Umami's migrations ($UMAMI_HOME/migrations/*.sql, in order, each in one transaction) on the
// database `umami` of pg unless its schema is there; output in <dir>/umami-migrate.log. Throws.
void ApplyUmamiMigrations(const PgServer& pg, const std::string& umami_home,
                          const std::string& dir);

class UmamiServer : public ServerProcess {  // stopped by SIGTERM
 public:
  // Process i (1-based) of the stack in dir; app_secret is shared by the stack's processes.
  UmamiServer(int index, std::string dir, std::string umami_home, std::string database_url,
              std::string app_secret);
  ~UmamiServer();
  UmamiServer(const UmamiServer&) = delete;
  UmamiServer& operator=(const UmamiServer&) = delete;

  // Spawns the process unless it runs (a new port at the first start when the pick was taken).
  void Spawn();
  // Waits for /api/heartbeat 200 while the process lives, then warms it up. Throws.
  void WaitReady(int timeout_ms = 60'000);
  void Start() {
    Spawn();
    WaitReady();
  }

  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::string log_path() const { return dir_ + "/umami-" + std::to_string(index_) + ".log"; }

 private:
  int index_;
  std::string dir_, home_, database_url_, app_secret_;
  int port_ = 0;
  bool started_once_ = false;
};

}  // namespace testsupport::stack
