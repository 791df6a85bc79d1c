#include "tests/support/stack/process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <httplib.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <thread>

extern char** environ;

namespace testsupport::stack {
namespace {

// argv[0] as a path: a name without '/' is looked up in PATH (before fork: the child may only
// make async-signal-safe calls, the test having threads of its own).
std::string Resolve(const std::string& name, const std::map<std::string, std::string>& env) {
  if (name.find('/') != std::string::npos) return name;
  auto it = env.find("PATH");
  const char* own = std::getenv("PATH");
  std::string path = it != env.end() ? it->second : (own != nullptr ? own : "/usr/bin:/bin");
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    std::string candidate = path.substr(start, end - start) + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  throw std::runtime_error("'" + name + "' not found in PATH " + path);
}

struct Credentials {
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;
};

Credentials LookUp(const std::string& user) {
  passwd* pw = getpwnam(user.c_str());
  if (pw == nullptr) throw std::runtime_error("no system user '" + user + "'");
  Credentials c{pw->pw_uid, pw->pw_gid, {}};
  int n = 64;
  c.groups.resize(static_cast<size_t>(n));
  if (getgrouplist(user.c_str(), pw->pw_gid, c.groups.data(), &n) < 0) {
    c.groups.resize(static_cast<size_t>(n));
    getgrouplist(user.c_str(), pw->pw_gid, c.groups.data(), &n);
  }
  c.groups.resize(static_cast<size_t>(n));
  return c;
}

int Decode(int st) { return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st); }

// Whether a process of group `pgid` other than a zombie is left (/proc/<pid>/stat: "pid (comm)
// state ppid pgrp ...").
bool GroupAlive(pid_t pgid) {
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(e.path() / "stat");
    std::string stat;
    std::getline(in, stat);
    auto close = stat.rfind(')');
    if (close == std::string::npos) continue;
    char state = 0;
    long ppid = 0, pgrp = 0;
    std::istringstream rest(stat.substr(close + 1));
    if (rest >> state >> ppid >> pgrp && pgrp == pgid && state != 'Z') return true;
  }
  return false;
}

}  // namespace

Process::~Process() {
  if (pid_ > 0 && Running()) Stop();
}

void Process::Start(const ProcessSpec& spec) {
  if (pid_ > 0 && Running()) throw std::runtime_error(spec.argv.at(0) + " runs already");
  spec_ = spec;
  const std::string exe = Resolve(spec.argv.at(0), spec.env);
  std::vector<char*> argv;
  for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : spec.env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  Credentials cred;
  if (!spec.run_as.empty()) cred = LookUp(spec.run_as);
  const int log = open(spec.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log < 0) throw std::runtime_error("cannot open " + spec.log_path + ": " + strerror(errno));
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    close(log);
    throw std::runtime_error("fork: " + std::string(strerror(errno)));
  }
  if (pid == 0) {
    setpgid(0, 0);
    // A parent that waits for its stop signal with them blocked (test_stack_tool) must not pass
    // the mask on: a server that cannot receive SIGTERM would only ever be killed.
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    const int null = open("/dev/null", O_RDONLY);
    dup2(null, 0);
    dup2(log, 1);
    dup2(log, 2);
    close_range(3, ~0U, 0);
    if (!spec.run_as.empty()) {
      if (setgroups(cred.groups.size(), cred.groups.data()) != 0 || setgid(cred.gid) != 0 ||
          setuid(cred.uid) != 0) {
        _exit(126);
      }
    }
    // After the credentials: changing them clears the parent-death signal.
    if (spec.die_with_parent) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(125);
    }
    if (!spec.cwd.empty() && chdir(spec.cwd.c_str()) != 0) _exit(124);
    execve(exe.c_str(), argv.data(), envp.data());
    const char msg[] = "execve failed\n";
    (void)!write(2, msg, sizeof msg - 1);
    _exit(127);
  }
  close(log);
  setpgid(pid, pid);  // also here: a signal to the group may come before the child ran
  pid_ = pid;
  running_ = true;
  status_ = -1;
}

bool Process::Running() {
  if (pid_ <= 0 || !running_) return false;
  int st = 0;
  pid_t r = waitpid(pid_, &st, WNOHANG);
  if (r == 0) return true;
  running_ = false;
  status_ = r == pid_ ? Decode(st) : -1;
  return false;
}

void Process::Signal(int sig) {
  if (Running()) kill(pid_, sig);
}

int Process::Wait(int timeout_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (Running()) {
    if (std::chrono::steady_clock::now() >= deadline) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return status_;
}

void Process::Kill() {
  if (pid_ <= 0) return;
  // The group outlives its leader while a forked child lives (no pid is reused as a group id
  // while the group exists): killing it also after the leader is gone reaches stragglers.
  kill(-pid_, SIGKILL);
  if (Running()) {
    kill(pid_, SIGKILL);
    if (Wait(30'000) == -1) {
      throw std::runtime_error(spec_.argv[0] + " (pid " + std::to_string(pid_) +
                               ") survived SIGKILL");
    }
  }
  // The rest of the group (a postmaster's backends) too: a server started again at once must
  // not find them holding its shared memory.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (GroupAlive(pid_) && std::chrono::steady_clock::now() < deadline) {
    kill(-pid_, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

int Process::Stop(int sig, int timeout_ms) {
  if (pid_ <= 0) return status_;
  if (Running()) {
    kill(-pid_, SIGCONT);  // a paused process cannot act on the signal
    kill(pid_, sig);
    Wait(timeout_ms);
  }
  Kill();
  return status_;
}

void Process::Pause() {
  if (Running()) kill(-pid_, SIGSTOP);
}

void Process::Resume() {
  if (Running()) kill(-pid_, SIGCONT);
}

void Process::Release() {
  pid_ = -1;
  running_ = false;
}

std::string Process::LogTail(int lines) const {
  std::ifstream in(spec_.log_path);
  std::deque<std::string> tail;
  std::string line;
  while (std::getline(in, line)) {
    tail.push_back(line);
    if (tail.size() > static_cast<size_t>(lines)) tail.pop_front();
  }
  std::string out;
  for (const auto& l : tail) out += l + "\n";
  return out;
}

int Process::RunToEnd(const ProcessSpec& spec, int timeout_ms) {
  Process p;
  p.Start(spec);
  int rc = p.Wait(timeout_ms);
  if (rc == -1) {
    p.Kill();
    return -1;
  }
  return rc;
}

std::map<std::string, std::string> InheritedEnv() {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string kv = *e;
    auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return env;
}

bool KeepServers() {
  // "1" as the scripts read it: KEEP_TEST_STACK=0 left every server running until 2026-12-07.
  const char* keep = std::getenv("KEEP_TEST_STACK");
  return keep != nullptr && std::string_view(keep) == "1";
}

int PickPort() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error("socket: " + std::string(strerror(errno)));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = 0;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    close(fd);
    throw std::runtime_error("bind 127.0.0.1:0: " + std::string(strerror(errno)));
  }
  close(fd);
  return ntohs(addr.sin_port);
}

namespace {

httplib::Result Get(int port, const std::string& path, int timeout_ms) {
  httplib::Client c("127.0.0.1", port);
  c.set_connection_timeout(std::chrono::milliseconds(timeout_ms));
  c.set_read_timeout(std::chrono::milliseconds(timeout_ms));
  return c.Get(path);
}

}  // namespace

int HttpStatus(int port, const std::string& path, int timeout_ms) {
  auto r = Get(port, path, timeout_ms);
  return r ? r->status : 0;
}

std::string HttpGetBody(int port, const std::string& path, int timeout_ms) {
  auto r = Get(port, path, timeout_ms);
  return r && r->status == 200 ? r->body : "";
}

int HttpPost(int port, const std::string& path, const std::string& body,
             const std::map<std::string, std::string>& headers, int timeout_ms) {
  httplib::Client c("127.0.0.1", port);
  c.set_connection_timeout(std::chrono::milliseconds(timeout_ms));
  c.set_read_timeout(std::chrono::milliseconds(timeout_ms));
  httplib::Headers h;
  for (const auto& [k, v] : headers) h.emplace(k, v);
  auto r = c.Post(path, h, body, "application/json");
  return r ? r->status : 0;
}

void Fail(const std::string& what, const Process& p) {
  throw std::runtime_error(what + " (log " + p.log_path() + "):\n" + p.LogTail());
}

}  // namespace testsupport::stack
