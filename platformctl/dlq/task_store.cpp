#include "platformctl/dlq/task_store.h"

#include <algorithm>
#include <thread>

#include "common/topology.h"
#include "platformctl/nats_admin_request.h"

namespace platformctl::dlq::task_store {
namespace {

using common::ErrorKind;

// Tries `f` again while the cluster answers nothing (an election after a node died), as every
// platformctl request does, for up to the cluster patience (30 s).
template <typename F>
auto Patiently(F f) -> decltype(f()) {
  platformctl::nats_admin::Patience patience;
  while (true) {
    auto r = f();
    if (r || r.error().kind != ErrorKind::kRetryable) return r;
    auto delay = patience.NextDelay();
    if (!delay) return r;
    std::this_thread::sleep_for(*delay);
  }
}

}  // namespace

common::Result<uint64_t> WriteTask(common::KvBucket& kv, const TaskRecord& t,
                                   std::optional<uint64_t> last) {
  // A write whose answer was lost and that is refused when tried again may have been ours: the
  // record read back says.
  const std::string value = EncodeTask(t);
  int tries = 0;
  auto r = Patiently([&]() -> common::Result<uint64_t> {
    ++tries;
    return last ? kv.Update(t.name, value, *last) : kv.Create(t.name, value);
  });
  if (!r && tries > 1 && r.error().kind == ErrorKind::kPermanent) {
    auto v = kv.Get(t.name);
    if (v && *v && (*v)->value == value) return (*v)->revision;
  }
  return r;
}

common::Result<std::unique_ptr<common::KvBucket>> OpenBucket(RunEnv& env) {
  auto b = Patiently(
      [&] { return common::KvBucket::Bind(env.client, common::topology::kDlqTasksBucket); });
  if (!b && b.error().kind != ErrorKind::kRetryable) {
    return common::Error::Invalid(std::string("the KV bucket ") +
                                  common::topology::kDlqTasksBucket +
                                  " cannot be used (run platformctl init): " + b.error().message);
  }
  return b;
}

common::Result<std::optional<Loaded>> Load(common::KvBucket& kv, const std::string& name) {
  auto v = Patiently([&] { return kv.Get(name); });
  if (!v) return v.error();
  if (!*v) return std::optional<Loaded>();
  auto t = DecodeTask((*v)->value);
  if (!t) return common::Error::Invalid("task " + name + ": " + t.error().message);
  return std::optional<Loaded>(Loaded{std::move(*t), (*v)->revision});
}

common::Result<std::vector<TaskRecord>> LoadAll(common::KvBucket& kv) {
  auto keys = Patiently([&] { return kv.Keys(); });
  if (!keys) return keys.error();
  std::sort(keys->begin(), keys->end());
  std::vector<TaskRecord> out;
  for (const auto& k : *keys) {
    auto l = Load(kv, k);
    if (!l) {
      if (l.error().kind == ErrorKind::kInvalid) continue;  // not ours: not listed
      return l.error();
    }
    if (*l) out.push_back(std::move((*l)->t));
  }
  return out;
}

}  // namespace platformctl::dlq::task_store
