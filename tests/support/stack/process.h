// Test support: one server process a test starts (nats-server, postgres, node), and the small
// network helpers every server handle needs (a port the OS picks, an HTTP request).
//
// A Process owns the process it spawned and that process's group: the child runs in a process
// group of its own (so a Kill reaches whatever it forked, a postmaster's backends too), with its
// stdin on /dev/null, stdout and stderr appended to a log file, every other descriptor closed,
// and the exact argv and environment given (nothing inherited unless the caller copies it). With
// die_with_parent it also gets SIGKILL when the test process dies, so a crashed or timed-out test
// leaves no server behind. The destructor stops what is still running (Stop: the stop signal,
// a wait, then SIGKILL to the group); Release() gives that up (KEEP_TEST_STACK).
//
// Not thread-safe: one thread (the test's main thread) starts, signals and waits for a Process.
// PR_SET_PDEATHSIG follows the thread that forked, so start servers from a thread that lives as
// long as they should.
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

namespace testsupport::stack {

struct ProcessSpec {
  std::vector<std::string> argv;           // argv[0]: a path, or a name looked up in PATH
  std::map<std::string, std::string> env;  // the child's whole environment
  std::string log_path;                    // appended to; created when missing
  std::string run_as;                      // a system user to run as (setuid), "" for ours
  std::string cwd;                         // "" for ours
  bool die_with_parent = true;             // SIGKILL when the test process dies
};

class Process {
 public:
  Process() = default;
  ~Process();  // Stop() unless Released
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  // Spawns the process; throws when one of ours still runs or fork/exec cannot start.
  void Start(const ProcessSpec& spec);
  pid_t pid() const { return pid_; }
  const std::string& log_path() const { return spec_.log_path; }
  // Alive (a zombie is reaped here and counts as gone).
  bool Running();
  // The exit status of the last run: its code, or 128 + signal; -1 while running or never run.
  int status() const { return status_; }

  // `sig` to the process itself (e.g. SIGHUP for a config reload).
  void Signal(int sig);
  // SIGKILL to the whole group, then waits until the process is gone.
  void Kill();
  // `sig` to the process, up to timeout_ms for it to exit, then Kill(). Returns the exit status.
  int Stop(int sig = 15, int timeout_ms = 15'000);
  // SIGSTOP / SIGCONT to the group.
  void Pause();
  void Resume();
  // Waits up to timeout_ms for the process to exit; its status, or -1 while it still runs.
  int Wait(int timeout_ms);
  // Forget the process without stopping it: it outlives the test (KEEP_TEST_STACK).
  void Release();

  // The last `lines` lines of the log (for error messages).
  std::string LogTail(int lines = 30) const;

  // Spawns, waits up to timeout_ms for exit (then kills it), returns the exit status.
  static int RunToEnd(const ProcessSpec& spec, int timeout_ms = 120'000);

 private:
  ProcessSpec spec_;
  pid_t pid_ = -1;
  bool running_ = false;
  int status_ = -1;
};

// What every server handle (NatsNode, PgServer, UmamiServer) does with its one process: stop it
// with its own stop signal (then SIGKILL after 15 s), kill, pause and resume its group, or
// leave it running (KEEP_TEST_STACK). Same thread rules as Process.
class ServerProcess {
 public:
  void Stop() { process_.Stop(stop_signal_, 15'000); }
  void Kill() { process_.Kill(); }      // SIGKILL to the group
  void Pause() { process_.Pause(); }    // SIGSTOP: hangs, its sockets stay open
  void Resume() { process_.Resume(); }  // SIGCONT
  bool Running() { return process_.Running(); }
  void Release() { process_.Release(); }
  pid_t pid() const { return process_.pid(); }
  Process& process() { return process_; }

 protected:
  explicit ServerProcess(int stop_signal) : stop_signal_(stop_signal) {}
  ~ServerProcess() = default;

  Process process_;

 private:
  int stop_signal_;
};

// This process's environment as a map (to copy into a ProcessSpec).
std::map<std::string, std::string> InheritedEnv();
// Whether KEEP_TEST_STACK=1 asks to leave a test's servers running.
bool KeepServers();

// A TCP port on 127.0.0.1 that the OS handed out for bind(0) and that is closed again: free now,
// possibly not a moment later, so whoever binds it retries with another on "address in use".
int PickPort();

// One HTTP request to http://127.0.0.1:port<path>; the status (0 when there was no answer).
int HttpStatus(int port, const std::string& path, int timeout_ms = 2000);
// The body of a 200 answer; "" for any other answer or none.
std::string HttpGetBody(int port, const std::string& path, int timeout_ms = 2000);
int HttpPost(int port, const std::string& path, const std::string& body,
             const std::map<std::string, std::string>& headers, int timeout_ms);

// Throws std::runtime_error(what + the log tail of `p`).
[[noreturn]] void Fail(const std::string& what, const Process& p);

}  // namespace testsupport::stack
