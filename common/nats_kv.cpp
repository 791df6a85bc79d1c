#include "common/nats_kv.h"

#include <nats/nats.h>

#include "common/nats_status.h"

namespace core {

Result<std::unique_ptr<KvBucket>> KvBucket::Bind(NatsClient& client, const std::string& bucket) {
  std::unique_ptr<KvBucket> b(new KvBucket());
  b->name_ = bucket;
  natsStatus s = js_KeyValue(&b->kv_, client.js(), bucket.c_str());
  if (s != NATS_OK) return NatsError(s, "KV bucket " + bucket + " (run platformctl init)");
  return b;
}

KvBucket::~KvBucket() {
  if (kv_ != nullptr) kvStore_Destroy(kv_);
}

Result<std::optional<KvValue>> KvBucket::Get(const std::string& key) {
  kvEntry* e = nullptr;
  natsStatus s = kvStore_Get(&e, kv_, key.c_str());
  if (s == NATS_NOT_FOUND) return std::optional<KvValue>();
  if (s != NATS_OK) return NatsError(s, "KV get " + name_ + "/" + key);
  KvValue v;
  const void* data = kvEntry_Value(e);
  int len = kvEntry_ValueLen(e);
  if (data != nullptr && len > 0) v.value.assign(static_cast<const char*>(data), len);
  v.revision = kvEntry_Revision(e);
  kvEntry_Destroy(e);
  return std::optional<KvValue>(std::move(v));
}

Result<uint64_t> KvBucket::Put(const std::string& key, const std::string& value) {
  uint64_t rev = 0;
  natsStatus s = kvStore_Put(&rev, kv_, key.c_str(), value.data(), static_cast<int>(value.size()));
  if (s != NATS_OK) return NatsError(s, "KV put " + name_ + "/" + key);
  return rev;
}

Result<uint64_t> KvBucket::Create(const std::string& key, const std::string& value) {
  uint64_t rev = 0;
  natsStatus s =
      kvStore_Create(&rev, kv_, key.c_str(), value.data(), static_cast<int>(value.size()));
  if (s != NATS_OK) return NatsError(s, "KV create " + name_ + "/" + key);
  return rev;
}

Result<uint64_t> KvBucket::Update(const std::string& key, const std::string& value, uint64_t last) {
  uint64_t rev = 0;
  natsStatus s =
      kvStore_Update(&rev, kv_, key.c_str(), value.data(), static_cast<int>(value.size()), last);
  if (s != NATS_OK) return NatsError(s, "KV update " + name_ + "/" + key);
  return rev;
}

Status KvBucket::Delete(const std::string& key) {
  natsStatus s = kvStore_Delete(kv_, key.c_str());
  if (s != NATS_OK) return NatsError(s, "KV delete " + name_ + "/" + key);
  return Status::Ok();
}

}  // namespace core
