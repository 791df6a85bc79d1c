// Stop requests the service's threads can poll or wait on.
//
// StopFlag is a plain flag with an optional parent and an optional deadline: a leadership term
// is a StopFlag whose parent is the process's StopSignal (SIGTERM ends the term too) and whose
// deadline is the lease's validity, so a term ends by itself when the lease is not renewed in
// time, even if the thread that renews it is stuck.
// StopSignal is the process's flag, raised by SIGTERM / SIGINT. Construct it in main() before
// any other thread starts: it blocks the two signals in every thread and waits for them on its
// own thread, so no code runs in a signal handler.
// Thread-safety: stopping(), WaitFor(), Request() and ExtendDeadline() may be called from any
// thread. A parent must outlive its children.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace common {

class StopFlag {
 public:
  StopFlag() = default;
  explicit StopFlag(const StopFlag* parent) : parent_(parent) {}
  StopFlag(const StopFlag&) = delete;
  StopFlag& operator=(const StopFlag&) = delete;
  virtual ~StopFlag() = default;

  bool stopping() const;
  // Sleeps up to d; returns true when a stop was requested (here, by the parent or by the
  // deadline passing).
  bool WaitFor(std::chrono::milliseconds d);
  void Request();
  // The flag reads as stopping from `deadline` on, unless extended again before then.
  void ExtendDeadline(std::chrono::steady_clock::time_point deadline);
  // Ends the flag by its deadline now: what a lost lease does.
  void Expire() { ExtendDeadline(std::chrono::steady_clock::now()); }
  // Stopping because the deadline passed (the lease ended), rather than by a request. Work
  // held then belongs to the next leader: it must not be handed back (a nak could reach the
  // next leader's delivery of the same message).
  bool expired() const;

 private:
  const StopFlag* parent_ = nullptr;
  std::atomic<bool> stopping_{false};
  std::atomic<std::chrono::steady_clock::rep> deadline_{0};  // 0: none
  std::mutex mu_;
  std::condition_variable cv_;
};

class StopSignal : public StopFlag {
 public:
  StopSignal();
  ~StopSignal() override;

 private:
  std::thread waiter_;
};

}  // namespace common
