// Private to the replayer's shell: the threads that carry out the engine core's fetches and
// lookups, and the inbox through which every answer reaches the engine thread.
//
// Threads: a Workers object runs a fetch thread and a lookup thread; each takes one request at a
// time from the engine thread (Fetch(), LookUp()) and puts the answer in the Inbox, then calls
// `wake` (HttpPool::Wakeup: it ends the engine thread's poll). Inbox methods may be called from
// any thread (one mutex); nats.c's publish completions use it too. Ownership: Workers borrows the
// consumer, the buckets and the inbox, which must outlive it; the destructor joins its threads.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "common/crash_guard_kv.h"
#include "common/nats_kv.h"
#include "common/nats_stream.h"
#include "replayer/core_io.h"

namespace replayer {

// A fetched batch: the messages stay with the shell, the deliveries go to the core.
struct Fetched {
  std::vector<common::Message> messages;
  std::vector<Delivery> deliveries;  // one per message, same order
  std::string error;
};

struct LookupJob {
  std::vector<GuardLookupCmd> guards;
  std::vector<VisitLookupCmd> visits;
};

struct GuardAnswer {
  uint64_t lookup_id;
  Lookup answer;
};

struct VisitAnswer {
  std::string lane;
  Lookup answer;
  std::string value;
};

struct PubDone {
  uint64_t tag;
  PubOutcome outcome;
};

class Inbox {
 public:
  struct Batch {
    std::vector<Fetched> fetched;
    std::vector<GuardAnswer> guards;
    std::vector<VisitAnswer> visits;
    std::vector<PubDone> published;
    void clear() {
      fetched.clear();
      guards.clear();
      visits.clear();
      published.clear();
    }
  };
  void Put(Fetched f);
  void Put(std::vector<GuardAnswer> guards, std::vector<VisitAnswer> visits);
  void Put(PubDone done);
  // Everything put so far, into `out` (emptied first); the inbox is empty afterwards.
  void Take(Batch& out);

 private:
  std::mutex mu_;
  Batch pending_;
};

class Workers {
 public:
  Workers(common::PullConsumer& consumer, common::KvBucket& stored_ids, common::KvBucket& visits,
          common::CrashGuard& crash_guard, Inbox& inbox, std::function<void()> wake);
  ~Workers();
  Workers(const Workers&) = delete;
  Workers& operator=(const Workers&) = delete;

  // At most one fetch is asked for at a time (the core sees to it).
  void Fetch(FetchCmd cmd);
  void LookUp(LookupJob job);

 private:
  void FetchLoop();
  void LookupLoop();

  common::PullConsumer& consumer_;
  common::KvBucket& stored_ids_;
  common::KvBucket& visits_;
  common::CrashGuard& crash_guard_;  // fetch thread only
  Inbox& inbox_;
  std::function<void()> wake_;
  std::mutex mu_;
  // One each: a fetch asked for must not wake the lookup thread, nor a lookup the fetch thread.
  std::condition_variable fetch_cv_, lookup_cv_;
  std::optional<FetchCmd> fetch_;
  std::deque<LookupJob> lookups_;
  bool stop_ = false;
  Ref next_ref_ = 0;  // fetch thread only: refs are numbered in fetch order
  std::thread fetcher_, looker_;
};

}  // namespace replayer
