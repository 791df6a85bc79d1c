#include "common/nats_admin.h"

#include <nats/nats.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "common/nats_status.h"
#include "common/timefmt.h"

namespace core::nats_admin {
namespace {

using topology::Retention;
using topology::StreamSettings;

struct StreamInfoDeleter {
  void operator()(jsStreamInfo* p) const { jsStreamInfo_Destroy(p); }
};
struct ConsumerListDeleter {
  void operator()(jsConsumerInfoList* p) const { jsConsumerInfoList_Destroy(p); }
};
struct KvDeleter {
  void operator()(kvStore* p) const { kvStore_Destroy(p); }
};
using StreamInfoPtr = std::unique_ptr<jsStreamInfo, StreamInfoDeleter>;

constexpr int64_t kNsPerMs = 1'000'000;

jsOptions RequestOptions(const NatsClient& client) {
  jsOptions o;
  jsOptions_Init(&o);
  o.Wait = client.request_timeout_ms();
  return o;
}

Result<StreamInfoPtr> GetInfo(NatsClient& client, const std::string& stream) {
  jsStreamInfo* raw = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  jsOptions o = RequestOptions(client);
  natsStatus s = js_GetStreamInfo(&raw, client.js(), stream.c_str(), &o, &jerr);
  if (s != NATS_OK) return NatsError(s, "stream info " + stream, jerr);
  return StreamInfoPtr(raw);
}

StreamSettings FromConfig(const jsStreamConfig& c) {
  StreamSettings s;
  s.name = c.Name ? c.Name : "";
  for (int i = 0; i < c.SubjectsLen; ++i) s.subjects.emplace_back(c.Subjects[i]);
  std::sort(s.subjects.begin(), s.subjects.end());
  s.retention = c.Retention == js_WorkQueuePolicy  ? Retention::kWorkQueue
                : c.Retention == js_InterestPolicy ? Retention::kInterest
                                                   : Retention::kLimits;
  s.file_storage = c.Storage == js_FileStorage;
  s.replicas = static_cast<int>(c.Replicas);
  s.max_age = Millis(c.MaxAge / kNsPerMs);
  s.duplicate_window = Millis(c.Duplicates / kNsPerMs);
  s.max_msgs_per_subject = c.MaxMsgsPerSubject <= 0 ? -1 : c.MaxMsgsPerSubject;
  s.allow_direct = c.AllowDirect;
  s.max_msg_size = c.MaxMsgSize <= 0 ? -1 : c.MaxMsgSize;
  if (s.name.rfind("KV_", 0) == 0) s.bucket = s.name.substr(3);
  return s;
}

// Copies `want`'s updatable fields into a config whose other fields the caller keeps.
void ApplyTo(const StreamSettings& want, jsStreamConfig& c, std::vector<const char*>& subjects) {
  subjects.clear();
  for (const auto& s : want.subjects) subjects.push_back(s.c_str());
  c.Subjects = subjects.data();
  c.SubjectsLen = static_cast<int>(subjects.size());
  c.Replicas = want.replicas;
  c.MaxAge = want.max_age.count() * kNsPerMs;
  c.Duplicates = want.duplicate_window.count() * kNsPerMs;
  c.MaxMsgsPerSubject = want.max_msgs_per_subject;
  c.AllowDirect = want.allow_direct;
  c.MaxMsgSize = static_cast<int32_t>(want.max_msg_size);
}

}  // namespace

Result<std::optional<StreamSettings>> ReadSettings(NatsClient& client, const std::string& stream) {
  auto info = GetInfo(client, stream);
  if (!info) {
    if (info.error().kind == ErrorKind::kNotFound) return std::optional<StreamSettings>();
    return info.error();
  }
  return std::optional<StreamSettings>(FromConfig(*(*info)->Config));
}

Status Create(NatsClient& client, const StreamSettings& want) {
  if (!want.bucket.empty()) {
    kvConfig kc;
    kvConfig_Init(&kc);
    kc.Bucket = want.bucket.c_str();
    kc.History =
        static_cast<uint8_t>(want.max_msgs_per_subject > 0 ? want.max_msgs_per_subject : 1);
    kc.TTL = want.max_age.count() * kNsPerMs;
    kc.Replicas = want.replicas;
    kc.StorageType = want.file_storage ? js_FileStorage : js_MemoryStorage;
    kvStore* raw = nullptr;
    natsStatus s = js_CreateKeyValue(&raw, client.js(), &kc);
    std::unique_ptr<kvStore, KvDeleter> kv(raw);
    if (s != NATS_OK) return NatsError(s, "create KV bucket " + want.bucket);
    // The KV defaults differ from ours in the duplicate window: bring it in line.
    return Update(client, want);
  }
  jsStreamConfig c;
  jsStreamConfig_Init(&c);
  c.Name = want.name.c_str();
  c.Retention = want.retention == Retention::kWorkQueue  ? js_WorkQueuePolicy
                : want.retention == Retention::kInterest ? js_InterestPolicy
                                                         : js_LimitsPolicy;
  c.Storage = want.file_storage ? js_FileStorage : js_MemoryStorage;
  std::vector<const char*> subjects;
  ApplyTo(want, c, subjects);
  jsStreamInfo* raw = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  jsOptions o = RequestOptions(client);
  natsStatus s = js_AddStream(&raw, client.js(), &c, &o, &jerr);
  StreamInfoPtr info(raw);
  if (s != NATS_OK) return NatsError(s, "create stream " + want.name, jerr);
  return Status::Ok();
}

Status Update(NatsClient& client, const StreamSettings& want) {
  auto info = GetInfo(client, want.name);
  if (!info) return info.error();
  jsStreamConfig c = *(*info)->Config;  // shallow copy; pointers stay owned by info
  std::vector<const char*> subjects;
  ApplyTo(want, c, subjects);
  jsStreamInfo* raw = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  jsOptions o = RequestOptions(client);
  natsStatus s = js_UpdateStream(&raw, client.js(), &c, &o, &jerr);
  StreamInfoPtr updated(raw);
  if (s != NATS_OK) return NatsError(s, "update stream " + want.name, jerr);
  return Status::Ok();
}

Result<backlog::StreamReading> ReadStream(NatsClient& client, const std::string& stream) {
  auto info = GetInfo(client, stream);
  if (!info) return info.error();
  jsConsumerInfoList* raw = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  jsOptions o = RequestOptions(client);
  natsStatus s = js_Consumers(&raw, client.js(), stream.c_str(), &o, &jerr);
  std::unique_ptr<jsConsumerInfoList, ConsumerListDeleter> list(raw);
  // A stream with no consumers answers "not found" to the listing on some server versions.
  if (s != NATS_OK && s != NATS_NOT_FOUND) return NatsError(s, "consumers of " + stream, jerr);

  backlog::StreamReading r;
  r.read_at_ns = NowUnixNs();
  r.name = stream;
  const jsStreamState& st = (*info)->State;
  r.messages = st.Msgs;
  r.bytes = st.Bytes;
  r.first_seq = st.FirstSeq;
  r.last_seq = st.LastSeq;
  r.first_ns = st.FirstTime;
  if (list) {
    for (int i = 0; i < list->Count; ++i) {
      const jsConsumerInfo* ci = list->List[i];
      backlog::ConsumerReading c;
      c.name = ci->Name ? ci->Name : "";
      c.pending = ci->NumPending;
      c.unacked = static_cast<uint64_t>(std::max<int64_t>(0, ci->NumAckPending));
      c.redelivered = static_cast<uint64_t>(std::max<int64_t>(0, ci->NumRedelivered));
      c.delivered_seq = ci->Delivered.Consumer;
      c.ack_floor_seq = ci->AckFloor.Consumer;
      c.last_delivered_ns = ci->Delivered.Last;
      c.last_acked_ns = ci->AckFloor.Last;
      c.max_ack_pending = ci->Config ? ci->Config->MaxAckPending : 0;
      c.waiting_pulls = ci->NumWaiting;
      r.consumers.push_back(std::move(c));
    }
    std::sort(r.consumers.begin(), r.consumers.end(),
              [](const auto& a, const auto& b) { return a.name < b.name; });
  }
  return r;
}

int64_t MaxPayload(NatsClient& client) { return natsConnection_GetMaxPayload(client.conn()); }

Result<std::vector<std::string>> StreamNames(NatsClient& client) {
  jsStreamNamesList* raw = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  jsOptions o = RequestOptions(client);
  natsStatus s = js_StreamNames(&raw, client.js(), &o, &jerr);
  std::vector<std::string> names;
  if (s == NATS_NOT_FOUND) return names;  // no streams at all
  if (s != NATS_OK) return NatsError(s, "stream names", jerr);
  for (int i = 0; i < raw->Count; ++i) names.emplace_back(raw->List[i]);
  jsStreamNamesList_Destroy(raw);
  return names;
}

}  // namespace core::nats_admin
