// SIGTERM / SIGINT as a stop request the service's threads can poll or wait on.
//
// Construct it in main() before any other thread starts: it blocks the two signals in every
// thread and waits for them on its own thread, so no code runs in a signal handler.
// Thread-safety: stopping(), WaitFor() and Request() may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace core {

class StopSignal {
 public:
  StopSignal();
  ~StopSignal();
  StopSignal(const StopSignal&) = delete;
  StopSignal& operator=(const StopSignal&) = delete;

  bool stopping() const { return stopping_.load(); }
  // Sleeps up to d; returns true when a stop was requested.
  bool WaitFor(std::chrono::milliseconds d);
  void Request();

 private:
  std::atomic<bool> stopping_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::thread waiter_;
};

}  // namespace core
