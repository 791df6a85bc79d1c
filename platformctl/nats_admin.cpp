#include "platformctl/nats_admin.h"

#include <nats/nats.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/js_error.h"
#include "common/nats_status.h"
#include "common/timefmt.h"
#include "platformctl/json_whole.h"

namespace platformctl::nats_admin {
namespace {

using topology::Retention;
using topology::StreamSettings;

struct StreamInfoDeleter {
  void operator()(jsStreamInfo* p) const { jsStreamInfo_Destroy(p); }
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

// A nats.c JetStream call (call(jerr) -> status), retried while the cluster elects a leader
// (no answer, or "temporarily unavailable") within the patience.
template <typename Call>
Status RetryJs(const std::string& what, Millis limit, Call call) {
  Patience patience(limit);
  while (true) {
    jsErrCode jerr = static_cast<jsErrCode>(0);
    natsStatus s = call(&jerr);
    if (s == NATS_OK) return Status::Ok();
    Error e = NatsError(s, what, jerr);
    if (jerr == JSClusterNotAvailErr) e.kind = ErrorKind::kRetryable;
    if (e.kind != ErrorKind::kRetryable) return e;
    auto delay = patience.NextDelay();
    if (!delay) {
      e.message += " (gave up after " + std::to_string(patience.waited().count() / 1000) + " s)";
      return e;
    }
    std::this_thread::sleep_for(*delay);
  }
}

// nats.c's stream info, retried while the cluster elects a leader.
Result<StreamInfoPtr> GetInfo(NatsClient& client, const std::string& stream) {
  StreamInfoPtr info;
  Status st = RetryJs("stream info " + stream, kClusterPatience, [&](jsErrCode* jerr) {
    jsStreamInfo* raw = nullptr;
    jsOptions o = RequestOptions(client);
    natsStatus s = js_GetStreamInfo(&raw, client.js(), stream.c_str(), &o, jerr);
    info.reset(raw);
    return s;
  });
  if (!st) return st.error();
  return info;
}

using json_whole::CountAt;
using json_whole::StringAt;

// A float is not read (json_whole.h: get<int64_t> of 1e300 is undefined behaviour).
int64_t I64(const nlohmann::json& j, const char* key, int64_t otherwise = 0) {
  return json_whole::WholeAt<int64_t>(j, key).value_or(otherwise);
}

int64_t TimeNs(const nlohmann::json& j, const char* key) {
  auto t = ParseJsTime(StringAt(j, key));
  return t ? *t : 0;
}

Result<nlohmann::json> InfoJson(NatsClient& client, const std::string& stream,
                                Millis limit = kClusterPatience) {
  Patience patience(limit);
  auto answer =
      ApiRequest(client, "$JS.API.STREAM.INFO." + stream, "", "stream info " + stream, patience);
  if (!answer) return answer.error();
  auto j = nlohmann::json::parse(*answer, nullptr, false);
  if (!j.is_object() || !j.contains("state") || !j["state"].is_object()) {
    return Error::Permanent("stream info " + stream + ": an answer that is not JetStream's");
  }
  return j;
}

backlog::StreamReading StateOf(const std::string& stream, const nlohmann::json& info) {
  backlog::StreamReading r;
  r.read_at_ns = NowUnixNs();
  r.name = stream;
  const auto& st = info["state"];
  r.messages = CountAt(st, "messages");
  r.bytes = CountAt(st, "bytes");
  r.first_seq = CountAt(st, "first_seq");
  r.last_seq = CountAt(st, "last_seq");
  r.first_ns = TimeNs(st, "first_ts");
  r.work_queue = info.contains("config") && info["config"].is_object() &&
                 StringAt(info["config"], "retention") == "workqueue";
  if (info.contains("config") && info["config"].is_object()) {
    const int64_t max_bytes = I64(info["config"], "max_bytes");
    r.max_bytes = max_bytes > 0 ? max_bytes : -1;
  }
  return r;
}

backlog::ConsumerReading ConsumerOf(const nlohmann::json& ci) {
  backlog::ConsumerReading c;
  const nlohmann::json empty = nlohmann::json::object();
  const auto& cfg = ci.contains("config") && ci["config"].is_object() ? ci["config"] : empty;
  c.name = StringAt(ci, "name");
  if (c.name.empty()) c.name = StringAt(cfg, "durable_name");
  if (c.name.empty()) c.name = StringAt(cfg, "name");
  c.pending = CountAt(ci, "num_pending");
  c.unacked = CountAt(ci, "num_ack_pending");
  c.redelivered = CountAt(ci, "num_redelivered");
  const auto& d = ci.contains("delivered") && ci["delivered"].is_object() ? ci["delivered"] : empty;
  const auto& a = ci.contains("ack_floor") && ci["ack_floor"].is_object() ? ci["ack_floor"] : empty;
  c.delivered_seq = CountAt(d, "consumer_seq");
  c.ack_floor_seq = CountAt(a, "consumer_seq");
  c.ack_floor_stream_seq = CountAt(a, "stream_seq");
  c.last_delivered_ns = TimeNs(d, "last_active");
  c.last_acked_ns = TimeNs(a, "last_active");
  c.max_ack_pending = I64(cfg, "max_ack_pending");
  c.waiting_pulls = I64(ci, "num_waiting");
  // An entry the server made up for a consumer it could not ask: no name, an offline cluster.
  bool all_offline = false;
  if (ci.contains("cluster") && ci["cluster"].is_object()) {
    const auto& cl = ci["cluster"];
    const auto rs = cl.find("replicas");
    if (StringAt(cl, "leader").empty() && rs != cl.end() && rs->is_array() && !rs->empty()) {
      all_offline = std::all_of(rs->begin(), rs->end(), [](const nlohmann::json& r) {
        return r.is_object() && r.value("offline", false);
      });
    }
  }
  c.offline = StringAt(ci, "name").empty() || all_offline;
  return c;
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
  s.allow_rollup = c.AllowRollup;
  s.max_msg_size = c.MaxMsgSize <= 0 ? -1 : c.MaxMsgSize;
  s.max_bytes = c.MaxBytes <= 0 ? -1 : c.MaxBytes;
  s.discard = c.Discard == js_DiscardNew ? common::topology::Discard::kNew
                                         : common::topology::Discard::kOld;
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
  c.AllowRollup = want.allow_rollup;
  c.MaxMsgSize = static_cast<int32_t>(want.max_msg_size);
  c.MaxBytes = want.max_bytes;
  c.Discard = want.discard == common::topology::Discard::kNew ? js_DiscardNew : js_DiscardOld;
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

namespace {

// `c` with `want`'s settings applied, sent as a new stream or as an update of the existing one.
Status Submit(NatsClient& client, const StreamSettings& want, jsStreamConfig& c, bool create) {
  std::vector<const char*> subjects;  // c points into it until the call returns
  ApplyTo(want, c, subjects);
  jsStreamInfo* raw = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  jsOptions o = RequestOptions(client);
  natsStatus s = create ? js_AddStream(&raw, client.js(), &c, &o, &jerr)
                        : js_UpdateStream(&raw, client.js(), &c, &o, &jerr);
  StreamInfoPtr info(raw);
  if (s != NATS_OK) {
    return NatsError(s, (create ? "create stream " : "update stream ") + want.name, jerr);
  }
  return Status::Ok();
}

}  // namespace

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
    // Set at creation: an account with max_bytes_required refuses a stream without a limit.
    kc.MaxBytes = want.max_bytes;
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
  return Submit(client, want, c, /*create=*/true);
}

Status Update(NatsClient& client, const StreamSettings& want) {
  auto info = GetInfo(client, want.name);
  if (!info) return info.error();
  jsStreamConfig c = *(*info)->Config;  // shallow copy; pointers stay owned by info
  return Submit(client, want, c, /*create=*/false);
}

Result<backlog::StreamReading> ReadState(NatsClient& client, const std::string& stream,
                                         Millis patience) {
  auto info = InfoJson(client, stream, patience);
  if (!info) return info.error();
  return StateOf(stream, *info);
}

Result<ConsumerPage> ParseConsumerList(std::string_view answer) {
  auto j = nlohmann::json::parse(answer, nullptr, false);
  if (!j.is_object()) return Error::Permanent("consumer list: an answer that is not JSON");
  ConsumerPage page;
  page.total = I64(j, "total");
  page.offset = I64(j, "offset");
  page.limit = I64(j, "limit");
  std::vector<std::string> missing;
  if (j.contains("missing") && j["missing"].is_array()) {
    for (const auto& m : j["missing"]) {
      if (m.is_string()) missing.push_back(m.get<std::string>());
    }
  }
  if (j.contains("consumers") && j["consumers"].is_array()) {
    for (const auto& ci : j["consumers"]) {
      if (ci.is_object()) page.consumers.push_back(ConsumerOf(ci));
    }
  }
  // Name the unnamed offline entries after the missing names not otherwise listed, then list
  // the missing ones that have no entry at all.
  std::vector<std::string> unmatched;
  for (const auto& m : missing) {
    bool listed = std::any_of(page.consumers.begin(), page.consumers.end(),
                              [&](const auto& c) { return c.name == m; });
    if (!listed) unmatched.push_back(m);
  }
  size_t next = 0;
  for (auto& c : page.consumers) {
    if (c.name.empty() && next < unmatched.size()) c.name = unmatched[next++];
    if (c.name.empty()) c.name = "(unnamed)";
    if (std::find(missing.begin(), missing.end(), c.name) != missing.end()) c.offline = true;
  }
  for (; next < unmatched.size(); ++next) {
    backlog::ConsumerReading c;
    c.name = unmatched[next];
    c.offline = true;
    page.consumers.push_back(std::move(c));
  }
  return page;
}

Result<backlog::StreamReading> ReadStream(NatsClient& client, const std::string& stream,
                                          Millis patience_limit) {
  auto r = ReadState(client, stream, patience_limit);
  if (!r) return r.error();
  // The list, page by page: one request, the server asks each consumer's leader itself.
  int64_t offset = 0;
  while (true) {
    Patience patience(patience_limit);
    auto answer = ApiRequest(client, "$JS.API.CONSUMER.LIST." + stream,
                             "{\"offset\":" + std::to_string(offset) + "}",
                             "consumers of " + stream, patience);
    if (!answer) {
      // A stream with no consumers answers "not found" to the listing on some server versions.
      if (answer.error().kind == ErrorKind::kNotFound && offset == 0) break;
      return answer.error();
    }
    auto page = ParseConsumerList(*answer);
    if (!page) return Error::Permanent("consumers of " + stream + ": " + page.error().message);
    int64_t got = static_cast<int64_t>(page->consumers.size());
    for (auto& c : page->consumers) r->consumers.push_back(std::move(c));
    offset += got;
    if (got == 0 || page->limit <= 0 || got < page->limit || offset >= page->total) break;
  }
  std::sort(r->consumers.begin(), r->consumers.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  r->read_at_ns = NowUnixNs();
  return r;
}

int64_t MaxPayload(NatsClient& client) { return natsConnection_GetMaxPayload(client.conn()); }

Result<std::vector<std::string>> StreamNames(NatsClient& client, Millis patience) {
  jsStreamNamesList* raw = nullptr;
  std::vector<std::string> names;
  Status st = RetryJs("stream names", patience, [&](jsErrCode* jerr) {
    jsOptions o = RequestOptions(client);
    natsStatus s = js_StreamNames(&raw, client.js(), &o, jerr);
    return s == NATS_NOT_FOUND ? NATS_OK : s;  // not found: no streams at all
  });
  if (!st) return st.error();
  if (raw != nullptr) {
    for (int i = 0; i < raw->Count; ++i) names.emplace_back(raw->List[i]);
    jsStreamNamesList_Destroy(raw);
  }
  return names;
}

Status SetReplicas(NatsClient& client, const std::string& stream, int replicas) {
  auto info = InfoJson(client, stream);
  if (!info) return info.error();
  nlohmann::json cfg = (*info)["config"];
  cfg["num_replicas"] = replicas;
  Patience patience;
  const std::string what = "set the replicas of " + stream + " to " + std::to_string(replicas);
  auto answer = ApiRequest(client, "$JS.API.STREAM.UPDATE." + stream, cfg.dump(), what, patience);
  if (!answer) return answer.error();
  auto j = nlohmann::json::parse(*answer, nullptr, false);
  if (j.is_object() && j.contains("config")) return Status::Ok();
  return Error::Permanent(what + ": an unexpected answer: " + answer->substr(0, 200));
}

}  // namespace platformctl::nats_admin
