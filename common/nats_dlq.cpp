#include "common/nats_dlq.h"

#include <nats/nats.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <utility>

#include <nlohmann/json.hpp>

#include "common/nats_admin.h"
#include "common/nats_status.h"

namespace core::nats_dlq {
namespace {

struct MsgDeleter {
  void operator()(natsMsg* m) const { natsMsg_Destroy(m); }
};
struct MetaDeleter {
  void operator()(jsMsgMetaData* m) const { jsMsgMetaData_Destroy(m); }
};
struct ConsumerInfoDeleter {
  void operator()(jsConsumerInfo* c) const { jsConsumerInfo_Destroy(c); }
};

// How long one wait for the next message lasts, and how many empty waits in a row are allowed
// while the server still reports matching messages (an ordered consumer being recreated after a
// gap takes a heartbeat interval or two).
constexpr int64_t kNextWaitMs = 1000;
constexpr int kMaxEmptyWaits = 15;

jsOptions RequestOptions(const NatsClient& client) {
  jsOptions o;
  jsOptions_Init(&o);
  o.Wait = client.request_timeout_ms();
  return o;
}

Headers CopyHeaders(natsMsg* msg, bool drop_size) {
  Headers out;
  const char** keys = nullptr;
  int count = 0;
  if (natsMsgHeader_Keys(msg, &keys, &count) != NATS_OK) return out;
  for (int i = 0; i < count; ++i) {
    if (drop_size && std::strcmp(keys[i], JSMsgSize) == 0) continue;
    const char** values = nullptr;
    int n = 0;
    if (natsMsgHeader_Values(msg, keys[i], &values, &n) == NATS_OK) {
      for (int j = 0; j < n; ++j) out.emplace_back(keys[i], values[j]);
      free(values);
    }
  }
  free(keys);
  return out;
}

// A probe of the stream at `seq`: the first message stored at seq or within the few after it
// (erased messages leave gaps). nullopt when none is there or the server did not answer.
constexpr uint64_t kProbeSpan = 16;
std::optional<std::pair<uint64_t, int64_t>> Probe(NatsClient& client, const std::string& stream,
                                                  uint64_t seq, uint64_t end) {
  jsOptions o = RequestOptions(client);
  for (uint64_t s = seq; s < end && s < seq + kProbeSpan; ++s) {
    natsMsg* raw = nullptr;
    natsStatus st = js_GetMsg(&raw, client.js(), stream.c_str(), s, &o, nullptr);
    std::unique_ptr<natsMsg, MsgDeleter> msg(raw);
    if (st == NATS_NOT_FOUND) continue;
    if (st != NATS_OK) return std::nullopt;
    return std::make_pair(s, natsMsg_GetTime(msg.get()));
  }
  return std::nullopt;
}

// The sequence to start a walk from `time_ns` at. nats-server 2.9's own start-by-time (a consumer
// with opt_start_time) now and then delivered nothing for a time that fell between two stored
// messages (the dlq list test: a bound at 35.005 s, messages at 33.859 s and 35.109 s, an empty
// consumer). So the walk starts by sequence, found here by a binary search over message gets on
// the stream's timestamps, which grow with the sequence. The answer never lies past the first
// message at or after the time: where a probe cannot tell (a gap, no answer) the search narrows
// towards the start, and callers filter by time as well, so starting early only costs reading.
uint64_t FirstSeqAtOrAfter(NatsClient& client, const std::string& stream, uint64_t lo,
                           uint64_t last, int64_t time_ns) {
  uint64_t hi = last + 1;  // lo: every message before it was stored before the time
  while (lo < hi) {
    uint64_t mid = lo + (hi - lo) / 2;
    auto found = Probe(client, stream, mid, hi);
    if (found && found->second < time_ns) {
      lo = found->first + 1;
    } else {
      hi = mid;  // at or after the time, or unknown: look before
    }
  }
  return lo;
}

// Messages the consumer has delivered plus those still to deliver; nullopt when unknown.
Result<uint64_t> PendingTotal(natsSubscription* sub, const NatsClient& client, bool undelivered) {
  jsConsumerInfo* raw = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  jsOptions o = RequestOptions(client);
  natsStatus s = natsSubscription_GetConsumerInfo(&raw, sub, &o, &jerr);
  std::unique_ptr<jsConsumerInfo, ConsumerInfoDeleter> ci(raw);
  if (s != NATS_OK) return NatsError(s, "read position", jerr);
  return undelivered ? ci->NumPending : ci->NumPending + ci->Delivered.Consumer;
}

}  // namespace

std::optional<std::string> StoredMessage::Header(std::string_view key) const {
  for (const auto& [k, v] : headers) {
    if (k == key) return v;
  }
  return std::nullopt;
}

Result<std::unique_ptr<StreamBrowser>> StreamBrowser::Open(NatsClient& client,
                                                           const BrowseSpec& spec) {
  std::unique_ptr<StreamBrowser> b(new StreamBrowser());
  b->spec_ = spec;
  if (spec.end_seq == 0 || spec.end_seq < spec.start_seq) {
    b->done_ = true;  // nothing to walk: no consumer needed
    return b;
  }
  uint64_t start_seq = std::max<uint64_t>(spec.start_seq, 1);
  if (spec.start_time_ns > 0) {
    auto state = nats_admin::ReadStream(client, spec.stream);
    if (!state) return state.error();
    start_seq = FirstSeqAtOrAfter(client, spec.stream, std::max(start_seq, state->first_seq),
                                  state->last_seq, spec.start_time_ns);
    if (start_seq > spec.end_seq) {
      b->done_ = true;  // nothing stored at or after the time within the walk
      return b;
    }
  }
  jsSubOptions so;
  jsSubOptions_Init(&so);
  so.Stream = b->spec_.stream.c_str();
  so.Ordered = true;
  so.Config.HeadersOnly = spec.headers_only;
  so.Config.DeliverPolicy = js_DeliverByStartSequence;
  so.Config.OptStartSeq = start_seq;
  jsOptions jo = RequestOptions(client);
  jsErrCode jerr = static_cast<jsErrCode>(0);
  natsStatus s =
      js_SubscribeSync(&b->sub_, client.js(), b->spec_.filter_subject.c_str(), &jo, &so, &jerr);
  if (s != NATS_OK) return NatsError(s, "read " + spec.stream, jerr);
  auto total = PendingTotal(b->sub_, client, false);
  if (!total) return total.error();
  b->initial_pending_ = *total;
  b->done_ = *total == 0;
  b->client_ = &client;
  return b;
}

StreamBrowser::~StreamBrowser() {
  if (sub_ != nullptr) {
    natsSubscription_Unsubscribe(sub_);  // removes the ephemeral consumer now
    natsSubscription_Destroy(sub_);
  }
}

Result<std::optional<StoredMessage>> StreamBrowser::Next() {
  int empty_waits = 0;
  while (!done_) {
    natsMsg* raw = nullptr;
    natsStatus s = natsSubscription_NextMsg(&raw, sub_, kNextWaitMs);
    if (s == NATS_TIMEOUT) {
      // Nothing came: either the walk is over (the matching messages ahead were erased by
      // someone else) or the consumer is slow or being recreated.
      auto left = PendingTotal(sub_, *client_, true);
      if (!left) return left.error();
      if (*left == 0) break;
      if (++empty_waits >= kMaxEmptyWaits) {
        return Error::Retryable("read " + spec_.stream + ": no message for " +
                                std::to_string(kMaxEmptyWaits * kNextWaitMs / 1000) +
                                " s while the server reports " + std::to_string(*left) + " more");
      }
      continue;
    }
    if (s != NATS_OK) return NatsError(s, "read " + spec_.stream);
    std::unique_ptr<natsMsg, MsgDeleter> msg(raw);
    jsMsgMetaData* meta_raw = nullptr;
    if (natsMsg_GetMetaData(&meta_raw, msg.get()) != NATS_OK) {
      return Error::Permanent("read " + spec_.stream + ": a message without JetStream metadata");
    }
    std::unique_ptr<jsMsgMetaData, MetaDeleter> meta(meta_raw);
    if (meta->Sequence.Stream > spec_.end_seq) break;
    if (meta->NumPending == 0) done_ = true;  // this one is the last that matched
    StoredMessage m;
    m.seq = meta->Sequence.Stream;
    m.time_ns = meta->Timestamp;
    const char* subj = natsMsg_GetSubject(msg.get());
    m.subject = subj ? subj : "";
    m.headers = CopyHeaders(msg.get(), spec_.headers_only);
    if (spec_.headers_only) {
      const char* size = nullptr;
      if (natsMsgHeader_Get(msg.get(), JSMsgSize, &size) == NATS_OK && size != nullptr) {
        std::from_chars(size, size + std::strlen(size), m.size);
      }
    } else {
      const char* d = natsMsg_GetData(msg.get());
      int n = natsMsg_GetDataLength(msg.get());
      if (d != nullptr && n > 0) m.data.assign(d, static_cast<size_t>(n));
      m.size = m.data.size();
    }
    return std::optional<StoredMessage>(std::move(m));
  }
  done_ = true;
  return std::optional<StoredMessage>();
}

struct BatchPublisherAccess {
  static void Acked(BatchPublisher* p, natsMsg* msg, Result<PubAck> r) {
    p->Acked(msg, std::move(r));
  }
};

namespace {

// nats.c hands the message to this handler, which must destroy it.
void OnBatchAck(jsCtx*, natsMsg* msg, jsPubAck* pa, jsPubAckErr* pae, void* closure) {
  auto* self = static_cast<BatchPublisher*>(closure);
  if (pa != nullptr && pae == nullptr) {
    BatchPublisherAccess::Acked(self, msg,
                                PubAck{pa->Stream ? pa->Stream : "", pa->Sequence, pa->Duplicate});
  } else {
    natsStatus err = pae != nullptr ? pae->Err : NATS_ERR;
    jsErrCode code = pae != nullptr ? pae->ErrCode : static_cast<jsErrCode>(0);
    std::string text = pae != nullptr && pae->ErrText != nullptr ? pae->ErrText : "";
    const char* subject = natsMsg_GetSubject(msg);
    BatchPublisherAccess::Acked(self, msg,
                                NatsError(err,
                                          std::string("publish to ") + (subject ? subject : "?") +
                                              (text.empty() ? "" : " (" + text + ")"),
                                          code));
  }
  natsMsg_Destroy(msg);
}

struct SubDeleter {
  void operator()(natsSubscription* s) const {
    natsSubscription_Unsubscribe(s);
    natsSubscription_Destroy(s);
  }
};

// One answer of the JetStream API to a message delete request.
Status EraseAnswer(natsMsg* reply, const std::string& what) {
  const char* status = nullptr;
  if (natsMsg_GetDataLength(reply) == 0 && natsMsgHeader_Get(reply, "Status", &status) == NATS_OK &&
      status != nullptr) {
    return Error::Retryable(what + ": no responders (status " + status + "): JetStream is down");
  }
  const char* d = natsMsg_GetData(reply);
  auto j = nlohmann::json::parse(d, d + natsMsg_GetDataLength(reply), nullptr, false);
  if (j.is_object() && j.value("success", false)) return Status::Ok();
  if (j.is_object() && j.contains("error") && j["error"].is_object()) {
    std::string desc = j["error"].value("description", "");
    int code = j["error"].value("err_code", 0);
    std::string msg = what + ": " + desc + " (JetStream error " + std::to_string(code) + ")";
    if (desc.find("no message found") != std::string::npos) return Error::NotFound(msg);
    return Error::Permanent(msg);
  }
  return Error::Permanent(what + ": an answer that is not the JetStream API's");
}

}  // namespace

Result<std::unique_ptr<BatchPublisher>> BatchPublisher::Create(NatsClient& client) {
  std::unique_ptr<BatchPublisher> p(new BatchPublisher());
  jsOptions o;
  jsOptions_Init(&o);
  o.Wait = client.request_timeout_ms();
  o.PublishAsync.AckHandler = OnBatchAck;
  o.PublishAsync.AckHandlerClosure = p.get();
  natsStatus s = natsConnection_JetStream(&p->js_, client.conn(), &o);
  if (s != NATS_OK) return NatsError(s, "JetStream context for batch publishing");
  return p;
}

BatchPublisher::~BatchPublisher() {
  if (js_ != nullptr) {
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MaxWait = 2000;
    js_PublishAsyncComplete(js_, &po);  // late acks must not reach a destroyed handler
    jsCtx_Destroy(js_);
  }
}

void BatchPublisher::Acked(natsMsg* msg, Result<PubAck> result) {
  std::lock_guard lock(mu_);
  auto it = index_.find(msg);
  if (it == index_.end()) return;  // an ack that came after its batch gave up on it
  results_[it->second] = std::move(result);
  index_.erase(it);
}

std::vector<Result<PubAck>> BatchPublisher::PublishAll(const std::vector<OutMessage>& batch,
                                                       Millis timeout) {
  {
    std::lock_guard lock(mu_);
    index_.clear();
    results_.assign(batch.size(), std::nullopt);
  }
  for (size_t i = 0; i < batch.size(); ++i) {
    const OutMessage& m = batch[i];
    natsMsg* msg = nullptr;
    natsStatus s = natsMsg_Create(&msg, m.subject.c_str(), nullptr, m.data.data(),
                                  static_cast<int>(m.data.size()));
    for (const auto& [k, v] : m.headers) {
      if (s == NATS_OK) s = natsMsgHeader_Add(msg, k.c_str(), v.c_str());
    }
    jsPubOptions po;
    jsPubOptions_Init(&po);
    if (!m.msg_id.empty()) po.MsgId = m.msg_id.c_str();
    if (!m.expect_stream.empty()) po.ExpectStream = m.expect_stream.c_str();
    natsMsg* key = msg;
    if (s == NATS_OK) {
      std::lock_guard lock(mu_);
      index_[key] = i;
    }
    if (s == NATS_OK) s = js_PublishMsgAsync(js_, &msg, &po);
    if (s != NATS_OK) {
      std::lock_guard lock(mu_);
      index_.erase(key);
      results_[i] = NatsError(s, "publish to " + m.subject);
    }
    if (msg != nullptr) natsMsg_Destroy(msg);  // still ours when the call failed
  }
  jsPubOptions po;
  jsPubOptions_Init(&po);
  po.MaxWait = timeout.count();
  js_PublishAsyncComplete(js_, &po);
  std::lock_guard lock(mu_);
  index_.clear();  // a late ack is ignored: that message counts as not acknowledged
  std::vector<Result<PubAck>> out;
  out.reserve(batch.size());
  for (size_t i = 0; i < batch.size(); ++i) {
    if (results_[i]) {
      out.push_back(std::move(*results_[i]));
    } else {
      out.push_back(Error::Retryable("publish to " + batch[i].subject +
                                     ": no acknowledgement within " +
                                     std::to_string(timeout.count()) + " ms"));
    }
  }
  return out;
}

std::vector<Status> EraseAll(NatsClient& client, const std::string& stream,
                             const std::vector<uint64_t>& seqs, Millis timeout) {
  std::vector<std::optional<Status>> got(seqs.size());
  auto what = [&](size_t i) { return "erase " + stream + " #" + std::to_string(seqs[i]); };
  auto inbox = client.NewInbox();
  if (!inbox) return std::vector<Status>(seqs.size(), Status(inbox.error()));
  natsSubscription* raw = nullptr;
  natsStatus s = natsConnection_SubscribeSync(&raw, client.conn(), (*inbox + ".*").c_str());
  std::unique_ptr<natsSubscription, SubDeleter> sub(raw);
  if (s != NATS_OK) {
    Error e = NatsError(s, "erase " + stream + ": reply subscription");
    return std::vector<Status>(seqs.size(), Status(e));
  }
  const std::string subject = "$JS.API.STREAM.MSG.DELETE." + stream;
  size_t expected = 0;
  for (size_t i = 0; i < seqs.size(); ++i) {
    std::string body = "{\"seq\":" + std::to_string(seqs[i]) + "}";  // no "no_erase": erase
    s = natsConnection_PublishRequest(client.conn(), subject.c_str(),
                                      (*inbox + "." + std::to_string(i)).c_str(), body.data(),
                                      static_cast<int>(body.size()));
    if (s != NATS_OK) {
      got[i] = Status(NatsError(s, what(i)));
    } else {
      ++expected;
    }
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (expected > 0) {
    auto left = std::chrono::duration_cast<Millis>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    natsMsg* m = nullptr;
    s = natsSubscription_NextMsg(&m, sub.get(), left.count());
    if (s == NATS_TIMEOUT) break;
    if (s != NATS_OK) break;
    std::unique_ptr<natsMsg, MsgDeleter> reply(m);
    std::string_view subj = natsMsg_GetSubject(m);
    size_t i = 0;
    auto tail = subj.substr(subj.rfind('.') + 1);
    if (std::from_chars(tail.data(), tail.data() + tail.size(), i).ec != std::errc() ||
        i >= seqs.size() || got[i]) {
      continue;
    }
    got[i] = EraseAnswer(m, what(i));
    --expected;
  }
  std::vector<Status> out;
  out.reserve(seqs.size());
  for (size_t i = 0; i < seqs.size(); ++i) {
    out.push_back(got[i] ? *got[i]
                         : Status(Error::Retryable(what(i) + ": no answer within " +
                                                   std::to_string(timeout.count()) + " ms")));
  }
  return out;
}

}  // namespace core::nats_dlq
