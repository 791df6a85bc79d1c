// A JetStream key-value bucket: get, put, create-if-absent and compare-and-set update.
//
// Adapter over nats.c (see nats_client.h). Ownership: KvBucket owns its kvStore handle and
// borrows the NatsClient, which must outlive it. Thread-safety: nats.c KV handles are
// thread-safe; any thread may call these. Each call is one round trip (GetMany and
// WriteMany send all their requests before awaiting the answers).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/nats_client.h"
#include "common/result.h"

typedef struct __kvStore kvStore;

namespace common {

// One write of WriteMany: a value to put, or (del) the key's delete marker.
struct KvWrite {
  std::string key;
  std::string value;
  bool del = false;
};

struct KvValue {
  std::string value;
  uint64_t revision = 0;
};

class KvBucket {
 public:
  static Result<std::unique_ptr<KvBucket>> Bind(NatsClient& client, const std::string& bucket);
  ~KvBucket();
  KvBucket(const KvBucket&) = delete;
  KvBucket& operator=(const KvBucket&) = delete;

  // nullopt when the key is absent, deleted or expired.
  Result<std::optional<KvValue>> Get(const std::string& key);
  // Get for many keys in one round trip: every request is written before any answer is awaited
  // (direct gets on a private inbox; one Get per key on a bucket without allow_direct). The
  // answers are in the order of `keys`.
  std::vector<Result<std::optional<KvValue>>> GetMany(const std::vector<std::string>& keys);
  Result<uint64_t> Put(const std::string& key, const std::string& value);
  // Fails with kPermanent when the key exists.
  Result<uint64_t> Create(const std::string& key, const std::string& value);
  // Fails with kPermanent when the key's revision is no longer `last`.
  Result<uint64_t> Update(const std::string& key, const std::string& value, uint64_t last);
  Status Delete(const std::string& key);
  // Puts and deletes (any revision) in one round trip: every write is sent before any answer
  // is awaited, each with its own reply subject, and each answered by the stream (its revision,
  // or the refusal with its err_code). The answers are in the order of `writes`. No order
  // between them is promised: at most one write per key.
  std::vector<Result<uint64_t>> WriteMany(const std::vector<KvWrite>& writes);
  // The bucket's keys, in no set order: one stream info request. A deleted key may be listed
  // (its delete marker); Get() answers it as absent.
  Result<std::vector<std::string>> Keys();
  // The bucket's TTL (its stream's max age); 0 when values never expire.
  Result<std::chrono::milliseconds> Ttl();

  const std::string& name() const { return name_; }

 private:
  KvBucket() = default;
  Result<uint64_t> Write(const std::string& key, const std::string& value,
                         std::optional<uint64_t> last, bool del, const char* what);
  kvStore* kv_ = nullptr;         // owned
  NatsClient* client_ = nullptr;  // borrowed
  bool direct_ = false;           // the stream answers direct gets (allow_direct)
  std::string name_;
};

}  // namespace common
