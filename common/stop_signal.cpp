#include "common/stop_signal.h"

#include <pthread.h>
#include <signal.h>

#include <algorithm>

#include <spdlog/spdlog.h>

namespace common {

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
      if (sig == SIGUSR2 && stopping()) return;
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

bool StopFlag::stopping() const {
  if (stopping_.load()) return true;
  auto d = deadline_.load();
  if (d != 0 && std::chrono::steady_clock::now().time_since_epoch().count() >= d) return true;
  return parent_ != nullptr && parent_->stopping();
}

bool StopFlag::expired() const {
  auto d = deadline_.load();
  return d != 0 && std::chrono::steady_clock::now().time_since_epoch().count() >= d;
}

bool StopFlag::WaitFor(std::chrono::milliseconds d) {
  // A parent's or a deadline's stop does not notify this flag's condition variable: wake in
  // short slices to look at them.
  const bool poll = parent_ != nullptr || deadline_.load() != 0;
  auto until = std::chrono::steady_clock::now() + d;
  std::unique_lock lock(mu_);
  while (true) {
    if (stopping()) return true;
    auto now = std::chrono::steady_clock::now();
    if (now >= until) return false;
    auto slice = poll ? std::min<std::chrono::steady_clock::duration>(until - now,
                                                                      std::chrono::milliseconds(50))
                      : until - now;
    cv_.wait_for(lock, slice, [this] { return stopping_.load(); });
  }
}

void StopFlag::Request() {
  {
    std::lock_guard lock(mu_);
    stopping_.store(true);
  }
  cv_.notify_all();
}

void StopFlag::ExtendDeadline(std::chrono::steady_clock::time_point deadline) {
  deadline_.store(deadline.time_since_epoch().count());
}

}  // namespace common
