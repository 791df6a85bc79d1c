#include "common/crash_guard_kv.h"

#include <spdlog/spdlog.h>

#include <chrono>

#include "common/topology.h"

namespace common {

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

void CrashGuard::Failed(const std::string& what, const Error& e) {
  ++failures_;
  rest_.Failed(std::chrono::steady_clock::now());
  // One line a rest at most: the rest bounds how often the bucket is asked.
  spdlog::warn(
      "crash-loop guard: {} failed ({}; {} failures, {} redeliveries read unguarded so far): "
      "redelivered messages are read without the guard for {} s, then it asks again",
      what, e.message, failures_, unguarded_, rest_.length().count() / 1000);
}

void CrashGuard::RemoveLeftBehind() {
  // In order, up to the first failure: with the bucket silent each try costs a request timeout.
  size_t done = 0;
  for (; done < not_removed_.size(); ++done) {
    auto st = bucket_->Delete(crash_guard::Key(durable_, not_removed_[done]));
    if (!st.ok()) {
      Failed("removing marker " + crash_guard::Key(durable_, not_removed_[done]), st.error());
      break;
    }
  }
  not_removed_.erase(not_removed_.begin(), not_removed_.begin() + static_cast<long>(done));
}

void CrashGuard::Prefetch(const std::vector<std::pair<uint64_t, uint64_t>>& batch) {
  prefetched_.clear();
  if (bucket_ == nullptr || rest_.Resting(std::chrono::steady_clock::now())) return;
  std::vector<uint64_t> seqs;
  std::vector<std::string> keys;
  for (const auto& [seq, delivered] : batch) {
    if (delivered <= 1) continue;  // a first delivery is read unmarked
    seqs.push_back(seq);
    keys.push_back(crash_guard::Key(durable_, seq));
  }
  if (keys.size() < 2) return;  // one marker: Before() reads it as it would anyway
  auto found = bucket_->GetMany(keys);
  for (size_t i = 0; i < seqs.size(); ++i) prefetched_.emplace(seqs[i], std::move(found[i]));
}

void CrashGuard::Flush() {
  if (!deferred_) return;
  const uint64_t seq = *deferred_;
  deferred_.reset();
  if (!rest_.Resting(std::chrono::steady_clock::now())) {
    auto st = bucket_->Delete(crash_guard::Key(durable_, seq));
    if (st.ok()) return;
    Failed("removing marker " + crash_guard::Key(durable_, seq), st.error());
  }
  not_removed_.push_back(seq);
}

CrashGuard::Verdict CrashGuard::Before(uint64_t stream_seq, uint64_t num_delivered) {
  Verdict v;
  v.seq = stream_seq;
  if (bucket_ == nullptr) return v;
  auto prefetched = prefetched_.extract(stream_seq);
  if (rest_.Resting(std::chrono::steady_clock::now())) {
    Flush();
    if (num_delivered > 1) ++unguarded_;
    return v;
  }
  if (!not_removed_.empty()) RemoveLeftBehind();  // before any message: NATS may be back
  if (num_delivered <= 1) {
    Flush();
    return v;
  }
  if (rest_.Resting(std::chrono::steady_clock::now())) {  // a removal just failed
    Flush();
    ++unguarded_;
    return v;
  }
  const std::string key = crash_guard::Key(durable_, stream_seq);
  Result<std::optional<KvValue>> found =
      prefetched ? std::move(prefetched.mapped()) : bucket_->Get(key);
  if (!found.ok()) {
    ++unguarded_;
    Failed("reading marker " + key, found.error());
    Flush();
    return v;
  }
  std::optional<std::string> value;
  if (found->has_value()) value = (*found)->value;
  const crash_guard::Decision d =
      crash_guard::Decide(num_delivered, value, crash_guard::ThisProcess());
  switch (d.step) {
    case crash_guard::Step::kRead:
      Flush();
      return v;
    case crash_guard::Step::kDeadLetter:
      Flush();
      v.dead_letter = true;
      v.detail = crash_guard::Detail(*value, num_delivered);
      return v;
    case crash_guard::Step::kMarkThenRead:
      break;
  }
  if (d.stop_counted) {
    // Logged: one reader stopped on this message; a second stop dead-letters it.
    spdlog::warn(
        "crash-loop guard: {} was being read by another process that stopped ({} of {} stops "
        "that dead-letter it); read again under a marker counting it",
        key, d.stops, crash_guard::kStoppedReaders);
  }
  const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  std::vector<KvWrite> writes{
      {key,
       crash_guard::Encode({num_delivered, now_ms, instance_, crash_guard::ThisProcess(), d.stops}),
       false}};
  // The same message again (a redelivery of one just read): its removal first, then its marker
  // (the writes of one WriteMany have no order between them).
  if (deferred_ == stream_seq) Flush();
  const std::optional<uint64_t> removing = deferred_;
  deferred_.reset();
  if (removing) writes.push_back({crash_guard::Key(durable_, *removing), "", true});
  auto written = bucket_->WriteMany(writes);
  if (removing && !written[1].ok()) {
    not_removed_.push_back(*removing);
    Failed("removing marker " + writes[1].key, written[1].error());
  }
  if (!written[0].ok()) {
    ++unguarded_;
    Failed("writing marker " + key, written[0].error());
    return v;
  }
  v.marked = true;
  return v;
}

void CrashGuard::Done(const Verdict& v, bool defer) {
  if (!v.marked) return;
  Flush();  // none is left (Before() sent it) unless a caller deferred twice
  deferred_ = v.seq;
  if (!defer) Flush();  // now; resting, it is tried again after the rest
}

}  // namespace common
