// Test support: a PostgreSQL 15 cluster of a test's own (initdb), as scripts/stack runs it: trust
// auth on loopback, the stack's postgresql.conf additions, databases `umami` and `metrics`.
//
// A PgServer owns its postmaster (the Process, run directly rather than through pg_ctl, so its
// PID is ours and a Kill reaches the backends in its process group), its log <dir>/pg.log and its
// data directory: <dir>/pg, or, when the test runs as root and the system user postgres (which
// initdb and postgres then run as) cannot reach <dir>, a /tmp/core-test-pg-XXXXXX of its own that
// the destructor removes. The port is the OS's pick at the first start (bind 0, close, use;
// another pick when postgres finds it taken) and stays the same for every later Start.
//
// Not thread-safe: the test's main thread starts, stops and asks it.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "tests/support/stack/process.h"

namespace testsupport::stack {

class PgServer : public ServerProcess {  // Stop: fast shutdown (SIGINT)
 public:
  // Makes the cluster (initdb) in the place described above; does not start it. port: one the
  // caller chose (a configuration was rendered with it), never re-picked; 0: the OS's pick.
  // Throws.
  explicit PgServer(const std::string& dir, int port = 0);
  ~PgServer();  // immediate shutdown (SIGQUIT), then the private data directory goes
  PgServer(const PgServer&) = delete;
  PgServer& operator=(const PgServer&) = delete;

  // Starts postgres unless it runs and waits until it accepts connections (pg_isready); the
  // first start also creates the databases. Throws with the log tail.
  void Start();

  int port() const { return port_; }
  // postgresql://postgres@127.0.0.1:<port>/<db>
  std::string Url(const std::string& db) const;
  const std::string& data_dir() const { return data_; }
  std::string log_path() const { return dir_ + "/pg.log"; }

  // psql -X -q -v ON_ERROR_STOP=1 against `db` as user postgres with `args`, its output
  // appended to `log`; the exit code.
  int Psql(const std::string& db, const std::vector<std::string>& args,
           const std::string& log) const;
  // The unaligned, tuples-only answer to one query (psql -tAc), without the trailing newline.
  // Throws when psql fails.
  std::string Query(const std::string& db, const std::string& sql) const;

 private:
  ProcessSpec AsPg(std::vector<std::string> argv) const;
  bool Spawn();  // false when the port was taken

  std::string dir_;
  std::string bin_;      // /usr/lib/postgresql/15/bin
  std::string private_;  // the /tmp directory of our own, "" when the data lives in dir_
  std::string data_, sock_;
  std::string run_as_;  // "postgres" as root, else ""
  int port_ = 0;
  bool fixed_port_ = false;
  bool started_once_ = false;
};

}  // namespace testsupport::stack
