#include "tests/integration/nats_server_process.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <stdexcept>

namespace testsupport {

bool Accepts(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  return ok;
}

ClosedPort::ClosedPort() {
  fd_ = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (fd_ < 0 || bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    throw std::runtime_error("cannot bind a closed port");
  }
  port_ = ntohs(addr.sin_port);
}

ClosedPort::~ClosedPort() { close(fd_); }

TempDir::TempDir() {
  char tmpl[] = "/tmp/core-it-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

TempDir::~TempDir() { Run("rm -rf '" + path_ + "'"); }

NatsServerProcess::NatsServerProcess(const std::string& dir, const std::string& name,
                                     const std::string& config, const std::string& binary) {
  const std::string bin = binary.empty() ? NatsServerBin() : binary;
  std::string conf = dir + "/" + name + ".conf";
  log_ = dir + "/" + name + ".log";
  // A port free when chosen may be taken before the server binds it (other tests, other
  // worktrees' stacks): then something else answers there. Ready means our process runs and
  // its own log says it listens on that port.
  for (int attempt = 0; attempt < 5; ++attempt) {
    port_ = FreePortRange(1);
    std::ofstream(conf) << "listen: 127.0.0.1:" << port_ << "\n" << config << "\n";
    std::remove(log_.c_str());
    process_ = std::make_unique<ChildProcess>(std::vector<std::string>{bin, "-c", conf},
                                              std::map<std::string, std::string>{}, log_);
    const std::string listening =
        "Listening for client connections on 127.0.0.1:" + std::to_string(port_);
    bool ready = WaitFor(
        [&] {
          return !process_->Running() ||
                 (ReadFile(log_).find(listening) != std::string::npos &&
                  ReadFile(log_).find("Server is ready") != std::string::npos);
        },
        10'000);
    if (ready && process_->Running() && Accepts(port_)) return;
    process_.reset();  // SIGKILL if it still runs
  }
  throw std::runtime_error("nats-server " + name + " did not start: " + ReadFile(log_));
}

NatsServerProcess::~NatsServerProcess() { Resume(); }

void NatsServerProcess::Pause() {
  kill(process_->pid(), SIGSTOP);
  paused_ = true;
}

void NatsServerProcess::Resume() {
  if (paused_) kill(process_->pid(), SIGCONT);
  paused_ = false;
}

}  // namespace testsupport
