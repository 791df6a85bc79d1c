// Test support: a private local stack (scripts/stack) on free ports, and child processes.
//
// Each TestStack gets its own directory and base port, so tests and a developer's default stack
// run side by side. The destructor stops everything it started. Not thread-safe: use a stack
// from the test's main thread.
//
// With StackOptions::nats_nodes = 3 the stack runs a three-node JetStream cluster
// (scripts/stack --nats-cluster 3): component "nats" is every node, NatsNode(j) one of them
// ("nats-<j>", j = 1..3), and Env("NATS_URL") lists every node.
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace testsupport {

// The repository root (for scripts/), set by CMake.
std::string SourceDir();
// The build directory holding the binaries, set by CMake.
std::string BinaryDir();

// The nats-server every test starts: $NATS_SERVER_BIN (e.g. /opt/nats-server/trixie/usr/sbin/
// nats-server, from scripts/install-deps), else NATS_SERVER_DEFAULT of scripts/lib/common.sh
// (sid's, the production line; never the system's 2.9.10, below the supported range). The first
// call in a process writes "nats-server <version> (<path>)" to stderr, so each test's log names
// the version it ran on, and sets NATS_SERVER_BIN to that path for the children (scripts/stack
// reads it); it throws when that binary does not run.
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
};

class TestStack {
 public:
  // components: any of "nats", "pg", "umami". umami_processes: Umami processes to start.
  explicit TestStack(const std::vector<std::string>& components, int umami_processes = 1);
  TestStack(const std::vector<std::string>& components, const StackOptions& options);
  ~TestStack();
  TestStack(const TestStack&) = delete;
  TestStack& operator=(const TestStack&) = delete;

  const std::string& dir() const { return dir_; }
  int base_port() const { return base_port_; }
  // Values from `scripts/stack env`: NATS_URL, DATABASE_URL, UMAMI_DATABASE_URL, UMAMI_URLS...
  std::string Env(const std::string& name) const;
  // "K=V K=V ..." for a child's environment.
  std::string EnvPrefix() const;

  int nats_nodes() const { return nats_nodes_; }
  // The component name of NATS node j (1-based) for Stop/Start/Kill: "nats-<j>" in a cluster.
  std::string NatsNode(int node) const;
  // Node j's client URL (nats://127.0.0.1:port) and monitoring URL (http://127.0.0.1:port).
  std::string NatsUrl(int node) const;
  std::string NatsMonitorUrl(int node) const;

  // Fault injection through scripts/stack: stop, start, kill (-9) a component.
  void Stop(const std::string& component);
  void Start(const std::string& component);
  void Kill(const std::string& component);

 private:
  std::string Stack(const std::string& args) const;
  std::string dir_;
  int base_port_ = 0;
  int nats_nodes_ = 1;
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
