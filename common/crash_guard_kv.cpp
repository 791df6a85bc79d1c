#include "common/crash_guard_kv.h"

#include <spdlog/spdlog.h>

#include <chrono>

#include "common/topology.h"

namespace common {
namespace {
constexpr const char* kReadAnyway = "the message is read without the guard";
}  // namespace

std::unique_ptr<CrashGuard> CrashGuard::Bind(NatsClient& nats, std::string durable,
                                             std::string instance) {
  std::unique_ptr<CrashGuard> g(new CrashGuard());
  g->durable_ = std::move(durable);
  g->instance_ = std::move(instance);
  auto b = KvBucket::Bind(nats, topology::kCrashGuardBucket);
  if (b.ok()) {
    g->bucket_ = std::move(*b);
  } else {
    spdlog::warn(
        "crash-loop guard off: KV bucket {} cannot be bound ({}); run platformctl init to create "
        "it. Until then a message this service dies on while reading it comes back to it",
        topology::kCrashGuardBucket, b.error().message);
  }
  return g;
}

void CrashGuard::Warn(const std::string& what, const Error& e, const char* so) {
  // The first failure and then every 100th: a NATS outage fails every call.
  if (failures_++ % 100 == 0) {
    spdlog::warn("crash-loop guard: {} failed ({}; {} failures so far): {}", what, e.message,
                 failures_, so);
  }
}

void CrashGuard::RemoveLeftBehind() {
  std::vector<uint64_t> still;
  for (uint64_t seq : not_removed_) {
    if (!bucket_->Delete(crash_guard::Key(durable_, seq)).ok()) still.push_back(seq);
  }
  not_removed_ = std::move(still);
}

CrashGuard::Verdict CrashGuard::Before(uint64_t stream_seq, uint64_t num_delivered) {
  Verdict v;
  v.seq = stream_seq;
  if (bucket_ == nullptr) return v;
  if (!not_removed_.empty()) RemoveLeftBehind();  // before any message: NATS may be back
  if (num_delivered <= 1) return v;
  const std::string key = crash_guard::Key(durable_, stream_seq);
  auto found = bucket_->Get(key);
  if (!found.ok()) {
    Warn("reading marker " + key, found.error(), kReadAnyway);
    return v;
  }
  switch (crash_guard::Decide(num_delivered, found->has_value())) {
    case crash_guard::Step::kRead:
      return v;
    case crash_guard::Step::kDeadLetter:
      v.dead_letter = true;
      v.detail = crash_guard::Detail((*found)->value, num_delivered);
      return v;
    case crash_guard::Step::kMarkThenRead:
      break;
  }
  const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  auto put = bucket_->Put(key, crash_guard::Encode({num_delivered, now_ms, instance_}));
  if (!put.ok()) {
    Warn("writing marker " + key, put.error(), kReadAnyway);
    return v;
  }
  v.marked = true;
  return v;
}

void CrashGuard::Done(const Verdict& v) {
  if (!v.marked) return;
  auto st = bucket_->Delete(crash_guard::Key(durable_, v.seq));
  if (!st.ok()) {
    Warn("removing marker " + crash_guard::Key(durable_, v.seq), st.error(),
         "tried again before the next message is read");
    not_removed_.push_back(v.seq);
  }
}

}  // namespace common
