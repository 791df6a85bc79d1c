// Test support: a private stack (NATS, PostgreSQL, Umami) on ports the OS picks, and child
// processes.
//
// A TestStack starts the servers a test asks for through tests/support/stack/ (a NatsNode per
// nats-server, a PgServer, an UmamiServer per Umami process), in the configuration shapes of
// scripts/stack, each in its own directory (/tmp/core-test-XXXXXX), so tests and a developer's
// default stack run side by side. It owns them: the destructor stops everything it started and
// removes the directory (KEEP_TEST_STACK=1 leaves both). Not thread-safe: use a stack from the
// test's main thread (the servers die with the thread that started them).
//
// With StackOptions::nats_nodes = 3 the stack runs a three-node JetStream cluster (scripts/stack
// --nats-cluster 3's shape): component "nats" is every node, NatsNode(j) one of them ("nats-<j>",
// j = 1..3), and Env("NATS_URL") lists every node.
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/stack/nats_node.h"
#include "tests/support/stack/pg_server.h"
#include "tests/support/stack/umami_server.h"

namespace testsupport {

// The repository root (for scripts/), set by CMake.
std::string SourceDir();
// The build directory holding the binaries, set by CMake.
std::string BinaryDir();

// The nats-server every test starts: $NATS_SERVER_BIN (e.g. /opt/nats-server/trixie/usr/sbin/
// nats-server, from scripts/install-deps), else NATS_SERVER_DEFAULT of scripts/lib/common.sh
// (sid's, the production line; never the system's 2.9.10, below the supported range). The first
// call in a process writes "nats-server <version> (<path>)" to stderr, so each test's log names
// the version it ran on, and sets NATS_SERVER_BIN to that path for the children (scripts that
// start their own servers read it); it throws when that binary does not run.
const std::string& NatsServerBin();

// Runs a shell command, returns its exit code; output goes to the test log.
int Run(const std::string& command);
// Runs a shell command and returns its stdout (stderr to the test log); *rc gets the exit code.
std::string Capture(const std::string& command, int* rc = nullptr);
// The whole file ("" when it cannot be read).
std::string ReadFile(const std::string& path);
// The last `groups` runs of a service log: consecutive lines that differ only in their time
// stamp and numbers are one run, shown by its first line and a count. A flood of one warning
// (hundreds a second while NATS is away) would otherwise fill a failure's report.
std::string CollapsedTail(const std::string& path, size_t groups);

struct StackOptions {
  int umami_processes = 1;
  int nats_nodes = 1;  // 1: one nats-server; 3: a JetStream cluster
  // PostgreSQL's port when a configuration was rendered with one (the deploy test's roles);
  // 0: the OS's pick.
  int pg_port = 0;
};

class TestStack {
 public:
  // components: any of "nats", "pg", "umami" (Umami needs "pg"). umami_processes: Umami
  // processes to start. Throws, with the failing server's log tail, when one does not come up.
  explicit TestStack(const std::vector<std::string>& components, int umami_processes = 1);
  TestStack(const std::vector<std::string>& components, const StackOptions& options);
  ~TestStack();
  TestStack(const TestStack&) = delete;
  TestStack& operator=(const TestStack&) = delete;

  const std::string& dir() const { return dir_; }
  // The first of a block of 16 ports that were free when the stack started, for the test's own
  // listeners (metrics endpoints, stand-ins): no server of the stack uses them.
  int base_port() const { return base_port_; }
  // STACK_DIR, STACK_BASE_PORT; with nats NATS_URL (every node), NATS_MONITOR_URL (node 1),
  // NATS_MONITOR_URLS, NATS_NODES; with pg DATABASE_URL (database metrics), UMAMI_DATABASE_URL;
  // UMAMI_URLS (every Umami process; empty without one). Throws for a name the stack does not
  // have.
  std::string Env(const std::string& name) const;
  // "K='V' K='V' ..." for a child's environment.
  std::string EnvPrefix() const;

  int nats_nodes() const { return nats_nodes_; }
  // The component name of NATS node j (1-based) for Stop/Start/Kill: "nats-<j>" in a cluster.
  std::string NatsNode(int node) const;
  // Node j's client URL (nats://127.0.0.1:port) and monitoring URL (http://127.0.0.1:port).
  std::string NatsUrl(int node) const;
  std::string NatsMonitorUrl(int node) const;

  // Fault injection by component ("nats", "nats-<j>", "pg", "umami", "umami-<i>"): Stop
  // (SIGTERM, or PostgreSQL's fast shutdown; SIGKILL after 15 s), Start (again, on the same ports
  // and store, waiting until it is ready; a running one is left as it is), Kill (SIGKILL).
  void Stop(const std::string& component);
  void Start(const std::string& component);
  void Kill(const std::string& component);

  // The servers themselves (pause, PIDs, ports, files); throw when the stack has none.
  stack::NatsNode& nats(int node);
  stack::PgServer& pg();
  stack::UmamiServer& umami(int index);
  const stack::NatsNode& nats(int node) const;
  const stack::PgServer& pg() const;
  const stack::UmamiServer& umami(int index) const;
  int umami_processes() const { return static_cast<int>(umami_.size()); }

 private:
  void StartNats();
  void StartUmami(const std::vector<stack::UmamiServer*>& servers);
  void MakeEnv();
  template <typename F>
  void ForEach(const std::string& component, F&& f);

  std::string dir_;
  int base_port_ = 0;
  int nats_nodes_ = 1;
  std::vector<std::unique_ptr<stack::NatsNode>> nats_;
  std::unique_ptr<stack::PgServer> pg_;
  std::vector<std::unique_ptr<stack::UmamiServer>> umami_;
  bool migrated_ = false;
  std::map<std::string, std::string> env_;
};

// A child process (one of our binaries) with its own environment and a log file.
class ChildProcess {
 public:
  ChildProcess(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
               const std::string& log_path);
  ~ChildProcess();  // SIGKILL if still running
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  bool Running();
  // Whether the process's main thread blocks `sig` now (/proc/<pid>/status SigBlk): how a test
  // knows a service has taken over SIGTERM (common::StopSignal blocks it) and a signal sent now
  // is its to handle, not the default action's.
  bool Blocks(int sig) const;
  void Signal(int sig);
  // Waits up to timeout_ms for exit; returns the exit status (or -1 on timeout, 128+sig when
  // signalled).
  int Wait(int timeout_ms);

 private:
  pid_t pid_ = -1;
  int status_ = -1;
};

// A TCP port nobody listens on now (and the next `span` ports too).
int FreePortRange(int span);

// A "<field> <n> kB" line of /proc/<pid>/status ("VmHWM:", "VmRSS:"): n, or -1 when the
// process or the field is not there.
long ProcStatusKb(pid_t pid, const char* field);

// Polls pred every 50 ms until it is true or timeout_ms passes.
bool WaitFor(const std::function<bool()>& pred, int timeout_ms);

}  // namespace testsupport
