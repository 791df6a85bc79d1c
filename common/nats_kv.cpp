#include "common/nats_kv.h"

#include <nats/nats.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string_view>

#include "common/js_error.h"
#include "common/nats_msg_ptr.h"
#include "common/nats_status.h"
#include "common/pub_answer.h"

namespace common {

Result<std::unique_ptr<KvBucket>> KvBucket::Bind(NatsClient& client, const std::string& bucket) {
  std::unique_ptr<KvBucket> b(new KvBucket());
  b->name_ = bucket;
  b->client_ = &client;
  natsStatus s = js_KeyValue(&b->kv_, client.js(), bucket.c_str());
  if (s != NATS_OK) return NatsError(s, "KV bucket " + bucket + " (run platformctl init)");
  // GetMany asks for direct gets, which only a stream with allow_direct answers.
  jsStreamInfo* si = nullptr;
  if (js_GetStreamInfo(&si, client.js(), ("KV_" + bucket).c_str(), nullptr, nullptr) == NATS_OK) {
    b->direct_ = si->Config != nullptr && si->Config->AllowDirect;
    jsStreamInfo_Destroy(si);
  }
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

namespace {

// The answer to a direct get of a key's last value, as Get() would give it.
Result<std::optional<KvValue>> DirectGetAnswer(natsMsg* m, const std::string& what) {
  const char* status = nullptr;
  if (natsMsg_GetDataLength(m) == 0 && natsMsgHeader_Get(m, "Status", &status) == NATS_OK) {
    if (std::strcmp(status, "404") == 0) return std::optional<KvValue>();
    const char* desc = nullptr;
    natsMsgHeader_Get(m, "Description", &desc);
    return Error::Retryable(what + ": status " + status + (desc ? std::string(" ") + desc : ""));
  }
  const char* op = nullptr;
  if (natsMsgHeader_Get(m, "KV-Operation", &op) == NATS_OK &&
      (std::strcmp(op, "DEL") == 0 || std::strcmp(op, "PURGE") == 0)) {
    return std::optional<KvValue>();
  }
  KvValue v;
  if (int len = natsMsg_GetDataLength(m); len > 0) v.value.assign(natsMsg_GetData(m), len);
  const char* seq = nullptr;
  if (natsMsgHeader_Get(m, "Nats-Sequence", &seq) == NATS_OK)
    v.revision = std::strtoull(seq, nullptr, 10);
  return std::optional<KvValue>(std::move(v));
}

}  // namespace

namespace {

// One request of RequestMany: a publish to `subject` (a KV delete marker when `kv_delete`).
struct Request {
  std::string subject;
  std::string payload;
  bool kv_delete = false;
};

// Sends every request before awaiting any answer, each with its own reply subject <inbox>.<i>
// on one private subscription, and waits up to the client's request timeout for the answers.
// Each answer is the message that came for it, or the error that kept it (unanswered in time:
// retryable).
std::vector<Result<NatsMsgPtr>> RequestMany(NatsClient& client, const std::vector<Request>& reqs,
                                            const std::string& what) {
  std::vector<Result<NatsMsgPtr>> out;
  out.reserve(reqs.size());
  for (size_t i = 0; i < reqs.size(); ++i) {
    out.emplace_back(Error::Retryable(what + ": no answer in time"));
  }
  if (reqs.empty()) return out;
  auto inbox = client.NewInbox();
  if (!inbox) {
    for (auto& o : out) o = inbox.error();
    return out;
  }
  const std::string prefix = *inbox + ".";
  natsSubscription* raw_sub = nullptr;
  natsStatus s = natsConnection_SubscribeSync(&raw_sub, client.conn(), (prefix + "*").c_str());
  if (s != NATS_OK) {
    for (auto& o : out) o = NatsError(s, what);
    return out;
  }
  std::vector<bool> answered(reqs.size(), false);
  size_t left = reqs.size();
  for (size_t i = 0; i < reqs.size(); ++i) {
    const std::string reply = prefix + std::to_string(i);
    natsMsg* raw = nullptr;
    s = natsMsg_Create(&raw, reqs[i].subject.c_str(), reply.c_str(), reqs[i].payload.data(),
                       static_cast<int>(reqs[i].payload.size()));
    NatsMsgPtr msg(raw);
    if (s == NATS_OK && reqs[i].kv_delete) s = natsMsgHeader_Set(msg.get(), "KV-Operation", "DEL");
    if (s == NATS_OK) s = natsConnection_PublishMsg(client.conn(), msg.get());
    if (s != NATS_OK) {
      out[i] = NatsError(s, what);
      answered[i] = true;  // nothing will come for it
      --left;
    }
  }
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(client.request_timeout_ms());
  while (left > 0) {
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (wait <= 0) break;
    natsMsg* m = nullptr;
    if (natsSubscription_NextMsg(&m, raw_sub, wait) != NATS_OK) break;
    NatsMsgPtr answer(m);
    const char* subject = natsMsg_GetSubject(m);
    const size_t i = std::strtoull(subject + prefix.size(), nullptr, 10);
    if (i < reqs.size() && !answered[i]) {
      answered[i] = true;
      --left;
      out[i] = std::move(answer);
    }
  }
  // An answer still missing may arrive while the subscription goes away: let it land first.
  DestroySubscription(client, raw_sub, /*quiesce=*/left > 0);
  return out;
}

// A stream's answer to a write: the revision it stored, or why not (as KindOf judges the
// err_code; a "no responders" status or an unreadable answer: retryable).
Result<uint64_t> WriteAnswer(natsMsg* m, const std::string& what) {
  const int len = natsMsg_GetDataLength(m);
  const std::string_view body(len > 0 ? natsMsg_GetData(m) : "", len > 0 ? len : 0);
  const PubAnswer a = ReadPubAnswer(body);
  switch (a.kind) {
    case PubAnswer::Kind::kStored:
      return a.seq;
    case PubAnswer::Kind::kRefused: {
      Error e{js_error::KindOf(a.status, a.err_code), what + ": " + a.description};
      e.code = a.err_code;
      return e;
    }
    case PubAnswer::Kind::kUnreadable:
      break;
  }
  const char* status = nullptr;
  if (natsMsgHeader_Get(m, "Status", &status) == NATS_OK) {
    return Error::Retryable(what + ": status " + status);
  }
  return Error::Retryable(what + ": unreadable answer (" + a.description + ")");
}

}  // namespace

std::vector<Result<std::optional<KvValue>>> KvBucket::GetMany(
    const std::vector<std::string>& keys) {
  const std::string what = "KV get " + name_;
  std::vector<Result<std::optional<KvValue>>> out;
  out.reserve(keys.size());
  if (!direct_) {
    for (const auto& key : keys) out.push_back(Get(key));
    return out;
  }
  std::vector<Request> reqs;
  reqs.reserve(keys.size());
  const std::string api = "$JS.API.DIRECT.GET.KV_" + name_ + ".$KV." + name_ + ".";
  for (const auto& key : keys) reqs.push_back({api + key, "", false});
  auto answers = RequestMany(*client_, reqs, what);
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!answers[i]) {
      out.push_back(answers[i].error().Retold(answers[i].error().message + "/" + keys[i]));
    } else {
      out.push_back(DirectGetAnswer(answers[i]->get(), what + "/" + keys[i]));
    }
  }
  return out;
}

namespace {

// nats.c's KV key rule (kv.c validKey): not empty, no empty token, [-/\\_=.A-Za-z0-9].
bool ValidKey(const std::string& key) {
  if (key.empty() || key.front() == '.' || key.back() == '.') return false;
  for (size_t i = 0; i < key.size(); ++i) {
    const char c = key[i];
    if (c == '.' && key[i - 1] == '.') return false;
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-' || c == '/' || c == '\\' || c == '=';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

// A write as nats.c's kvStore_Put/Update/Delete make it (a publish to $KV.<bucket>.<key>, with
// the expected last revision or the delete marker's header), but keeping JetStream's err_code,
// which kvStore_* drop: a busy 2.11+ server's 429 (common/js_error.h) is then retryable, not
// a refusal. `last`: nullopt for any revision, 0 for "no value yet".
Result<uint64_t> KvBucket::Write(const std::string& key, const std::string& value,
                                 std::optional<uint64_t> last, bool del, const char* what) {
  const std::string where = std::string(what) + " " + name_ + "/" + key;
  if (!ValidKey(key)) return Error::Invalid(where + ": invalid key");
  const std::string subject = "$KV." + name_ + "." + key;
  natsMsg* raw = nullptr;
  natsStatus s =
      natsMsg_Create(&raw, subject.c_str(), nullptr, value.data(), static_cast<int>(value.size()));
  if (s != NATS_OK) return NatsError(s, where);
  NatsMsgPtr msg(raw);
  if (del && (s = natsMsgHeader_Set(msg.get(), "KV-Operation", "DEL")) != NATS_OK) {
    return NatsError(s, where);
  }
  jsPubOptions po;
  jsPubOptions_Init(&po);
  po.MaxWait = client_->request_timeout_ms();
  if (last && *last == 0) po.ExpectNoMessage = true;
  if (last && *last > 0) po.ExpectLastSubjectSeq = *last;
  jsPubAck* pa = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  s = js_PublishMsg(&pa, client_->js(), msg.get(), &po, &jerr);
  if (s != NATS_OK) return NatsError(s, where, jerr);
  const uint64_t rev = pa->Sequence;
  jsPubAck_Destroy(pa);
  return rev;
}

Result<uint64_t> KvBucket::Put(const std::string& key, const std::string& value) {
  return Write(key, value, std::nullopt, false, "KV put");
}

Result<uint64_t> KvBucket::Create(const std::string& key, const std::string& value) {
  auto r = Write(key, value, 0, false, "KV create");
  if (r || r.error().code != js_error::kWrongLastSequence) return r;
  // The key has a last message: a value, or the marker a delete left. nats.c's create tells
  // them apart and writes over a marker (its own first try fails again the same way).
  uint64_t rev = 0;
  natsStatus s =
      kvStore_Create(&rev, kv_, key.c_str(), value.data(), static_cast<int>(value.size()));
  if (s == NATS_OK) return rev;
  // nats.c drops the err_code: its refusal is the one above (the key holds a value), unless
  // the second round trip itself failed.
  Error second = NatsError(s, "KV create " + name_ + "/" + key);
  return second.kind == ErrorKind::kRetryable ? second : r.error();
}

Result<uint64_t> KvBucket::Update(const std::string& key, const std::string& value, uint64_t last) {
  return Write(key, value, last, false, "KV update");
}

Result<std::vector<std::string>> KvBucket::Keys() {
  // One stream info request with a subjects filter, answered by the bucket's stream leader
  // (nats.c's kvStore_Keys creates a consumer, which after a node's death timed out for the
  // whole 30 s of a cluster's patience). A key whose last message is a delete marker is listed
  // too: Get() answers it as absent.
  jsOptions o;
  jsOptions_Init(&o);
  const std::string filter = "$KV." + name_ + ".>";
  o.Stream.Info.SubjectsFilter = filter.c_str();
  jsStreamInfo* si = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  natsStatus s = js_GetStreamInfo(&si, client_->js(), ("KV_" + name_).c_str(), &o, &jerr);
  if (s != NATS_OK) return NatsError(s, "KV keys " + name_);
  std::vector<std::string> out;
  const size_t prefix = filter.size() - 1;  // "$KV.<bucket>."
  if (si->State.Subjects != nullptr) {
    for (int i = 0; i < si->State.Subjects->Count; ++i) {
      std::string subject = si->State.Subjects->List[i].Subject;
      if (subject.size() > prefix) out.push_back(subject.substr(prefix));
    }
  }
  jsStreamInfo_Destroy(si);
  return out;
}

Result<std::chrono::milliseconds> KvBucket::Ttl() {
  kvStatus* st = nullptr;
  natsStatus s = kvStore_Status(&st, kv_);
  if (s != NATS_OK) return NatsError(s, "KV status " + name_);
  // nats.c reports the stream's max age as JetStream stores it: nanoseconds.
  int64_t ns = kvStatus_TTL(st);
  kvStatus_Destroy(st);
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::nanoseconds(ns));
}

Status KvBucket::Delete(const std::string& key) {
  auto r = Write(key, "", std::nullopt, true, "KV delete");
  if (!r) return r.error();
  return Status::Ok();
}

std::vector<Result<uint64_t>> KvBucket::WriteMany(const std::vector<KvWrite>& writes) {
  std::vector<Result<uint64_t>> out;
  out.reserve(writes.size());
  std::vector<Request> reqs;
  std::vector<size_t> sent;  // reqs[j] is writes[sent[j]]
  for (size_t i = 0; i < writes.size(); ++i) {
    const KvWrite& w = writes[i];
    if (!ValidKey(w.key)) {
      out.emplace_back(Error::Invalid(std::string(w.del ? "KV delete " : "KV put ") + name_ + "/" +
                                      w.key + ": invalid key"));
      continue;
    }
    out.emplace_back(uint64_t{0});
    sent.push_back(i);
    reqs.push_back({"$KV." + name_ + "." + w.key, w.del ? std::string() : w.value, w.del});
  }
  auto answers = RequestMany(*client_, reqs, "KV write " + name_);
  for (size_t j = 0; j < sent.size(); ++j) {
    const KvWrite& w = writes[sent[j]];
    const std::string what = std::string(w.del ? "KV delete " : "KV put ") + name_ + "/" + w.key;
    if (!answers[j]) {
      out[sent[j]] = answers[j].error().Retold(what + ": " + answers[j].error().message);
    } else {
      out[sent[j]] = WriteAnswer(answers[j]->get(), what);
    }
  }
  return out;
}

}  // namespace common
