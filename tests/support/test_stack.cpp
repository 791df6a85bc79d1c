#include "tests/support/test_stack.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <thread>

namespace testsupport {

std::string SourceDir() { return CORE_TEST_SOURCE_DIR; }
std::string BinaryDir() { return CORE_TEST_BINARY_DIR; }

int Run(const std::string& command) {
  int rc = std::system(command.c_str());
  if (rc == -1) return -1;
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc);
}

std::string Capture(const std::string& command, int* rc) {
  std::string out;
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) throw std::runtime_error("popen failed: " + command);
  std::array<char, 4096> buf{};
  size_t n = 0;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  int status = pclose(p);
  if (rc != nullptr) *rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return out;
}

const std::string& NatsServerBin() {
  static const std::string bin = [] {
    const char* env = std::getenv("NATS_SERVER_BIN");
    int rc = 0;
    std::string path = env != nullptr && *env != '\0' ? env : "";
    if (path.empty()) {
      // The default is named once, in scripts/lib/common.sh (scripts/stack's too).
      path = Capture("bash -c '. \"$0\" && printf %s \"$NATS_SERVER_DEFAULT\"' '" + SourceDir() +
                         "/scripts/lib/common.sh'",
                     &rc);
      if (rc != 0 || path.empty()) {
        throw std::runtime_error("no NATS_SERVER_DEFAULT in scripts/lib/common.sh");
      }
    }
    std::string version = Capture("'" + path + "' --version 2>&1", &rc);
    while (!version.empty() && version.back() == '\n') version.pop_back();
    // "nats-server: v2.10.27": which server a test ran on decides how to read its result.
    const std::string prefix = "nats-server: ";
    if (rc != 0 || version.rfind(prefix, 0) != 0) {
      throw std::runtime_error("NATS_SERVER_BIN: '" + path + "' is no nats-server (" +
                               std::to_string(rc) + "): " + version +
                               " (scripts/install-deps installs the tested ones)");
    }
    std::fprintf(stderr, "nats-server %s (%s)\n", version.substr(prefix.size()).c_str(),
                 path.c_str());
    // Children (scripts/stack, tests' scripts) start the same one.
    setenv("NATS_SERVER_BIN", path.c_str(), 1);
    return path;
  }();
  return bin;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string CollapsedTail(const std::string& path, size_t groups) {
  std::ifstream in(path);
  if (!in) return "(cannot read " + path + ")\n";
  struct Run {
    std::string first, last;
    size_t more = 0;
  };
  // The text after the time stamp, its digits dropped.
  auto key = [](const std::string& line) {
    std::string k;
    for (char c : line.substr(std::min(line.size(), line.find(' ')))) {
      if (c < '0' || c > '9') k += c;
    }
    return k;
  };
  std::deque<Run> runs;
  std::string last_key, line;
  while (std::getline(in, line)) {
    std::string k = key(line);
    if (!runs.empty() && k == last_key) {
      ++runs.back().more;
      runs.back().last = line;
      continue;
    }
    runs.push_back({line, "", 0});
    last_key = std::move(k);
    if (runs.size() > groups) runs.pop_front();
  }
  std::string out;
  for (const auto& r : runs) {
    out += r.first + "\n";
    if (r.more > 0) {
      out += "  [... " + std::to_string(r.more) +
             " more like it, the last: " + r.last.substr(0, r.last.find(' ')) + "]\n";
    }
  }
  return out;
}

namespace {

bool PortFree(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  bool ok = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  return ok;
}

}  // namespace

int FreePortRange(int span) {
  std::random_device rd;
  std::mt19937 gen(rd() ^ static_cast<unsigned>(getpid()));
  // Below Linux's ephemeral range (32768-60999 by default): a port free now is not handed to
  // some client's outgoing connection before the stack binds it.
  std::uniform_int_distribution<int> dist(10000, 32000 - span);
  for (int attempt = 0; attempt < 200; ++attempt) {
    int base = dist(gen) / 32 * 32;
    bool all = true;
    for (int p = base; p < base + span && all; ++p) all = PortFree(p);
    if (all) return base;
  }
  throw std::runtime_error("no free port range");
}

bool WaitFor(const std::function<bool()>& pred, int timeout_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return pred();
}

ChildProcess::ChildProcess(const std::vector<std::string>& argv,
                           const std::map<std::string, std::string>& env,
                           const std::string& log_path) {
  // Everything the child needs is made here, before fork: the child of a process with other
  // threads (nats.c's) may only make async-signal-safe calls. Its setenv and vector growth
  // after fork took an allocator lock another thread held at the fork and hung for good under
  // ASan on a loaded machine: an empty log, a metricswriter that never started (four tests of
  // the sanitizer pass, fresh-clone runs of 42b25c5 and 6f62cb3).
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view kv(*e);
    if (!env.contains(std::string(kv.substr(0, kv.find('='))))) env_strings.emplace_back(kv);
  }
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  pid_ = fork();
  if (pid_ < 0) {
    if (fd >= 0) close(fd);
    throw std::runtime_error("fork failed");
  }
  if (pid_ == 0) {
    if (fd >= 0) {
      dup2(fd, 1);  // dup2's copies do not keep O_CLOEXEC
      dup2(fd, 2);
    }
    execve(args[0], args.data(), envp.data());
    const char msg[] = "execve failed\n";
    (void)!write(2, msg, sizeof msg - 1);
    _exit(127);
  }
  if (fd >= 0) close(fd);
}

ChildProcess::~ChildProcess() {
  if (Running()) {
    kill(pid_, SIGKILL);
    Wait(5000);
  }
}

long ProcStatusKb(pid_t pid, const char* field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  const size_t n = std::strlen(field);
  while (std::getline(in, line)) {
    if (line.compare(0, n, field) == 0) return std::stol(line.substr(n));
  }
  return -1;
}

bool ChildProcess::Blocks(int sig) const {
  std::ifstream in("/proc/" + std::to_string(pid_) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("SigBlk:", 0) != 0) continue;
    unsigned long long mask = std::strtoull(line.c_str() + 7, nullptr, 16);
    return (mask >> (sig - 1)) & 1ULL;
  }
  return false;
}

bool ChildProcess::Running() {
  if (pid_ <= 0 || status_ != -1) return false;
  int st = 0;
  pid_t r = waitpid(pid_, &st, WNOHANG);
  if (r == 0) return true;
  status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return false;
}

void ChildProcess::Signal(int sig) {
  if (Running()) kill(pid_, sig);
}

int ChildProcess::Wait(int timeout_ms) {
  WaitFor([this] { return !Running(); }, timeout_ms);
  return Running() ? -1 : status_;
}

}  // namespace testsupport
