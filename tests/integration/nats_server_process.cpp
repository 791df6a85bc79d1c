#include "tests/integration/nats_server_process.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace testsupport {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

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

TempDir::TempDir() {
  char tmpl[] = "/tmp/core-it-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

TempDir::~TempDir() { Run("rm -rf '" + path_ + "'"); }

NatsServerProcess::NatsServerProcess(const std::string& dir, const std::string& name,
                                     const std::string& config) {
  port_ = FreePortRange(1);
  std::string conf = dir + "/" + name + ".conf";
  log_ = dir + "/" + name + ".log";
  std::ofstream(conf) << "listen: 127.0.0.1:" << port_ << "\n" << config << "\n";
  process_ =
      std::make_unique<ChildProcess>(std::vector<std::string>{"/usr/sbin/nats-server", "-c", conf},
                                     std::map<std::string, std::string>{}, log_);
  if (!WaitFor([&] { return Accepts(port_); }, 10'000)) {
    throw std::runtime_error("nats-server " + name + " did not start: " + ReadFile(log_));
  }
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
