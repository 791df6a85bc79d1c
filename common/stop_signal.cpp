#include "common/stop_signal.h"

#include <pthread.h>
#include <signal.h>

#include <spdlog/spdlog.h>

namespace core {

namespace {
sigset_t StopSet() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGUSR2);  // our own wake-up when the object is destroyed
  return set;
}
}  // namespace

StopSignal::StopSignal() {
  sigset_t set = StopSet();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);  // a closed socket is an error return, not a process exit
  waiter_ = std::thread([this, set] {
    int sig = 0;
    while (sigwait(&set, &sig) == 0) {
      if (sig == SIGUSR2 && stopping_.load()) return;
      if (sig == SIGTERM || sig == SIGINT) {
        spdlog::info("{} received: stopping", sig == SIGTERM ? "SIGTERM" : "SIGINT");
        Request();
      }
      if (sig == SIGUSR2) return;
    }
  });
}

StopSignal::~StopSignal() {
  Request();
  pthread_kill(waiter_.native_handle(), SIGUSR2);
  waiter_.join();
}

bool StopSignal::WaitFor(std::chrono::milliseconds d) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, d, [this] { return stopping_.load(); });
}

void StopSignal::Request() {
  {
    std::lock_guard lock(mu_);
    stopping_.store(true);
  }
  cv_.notify_all();
}

}  // namespace core
