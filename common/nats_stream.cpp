#include "common/nats_stream.h"

#include <nats/nats.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>

#include "common/ack_subject.h"
#include "common/js_error.h"
#include "common/nats_msg_ptr.h"
#include "common/nats_status.h"

namespace common {
namespace {

jsOptions Wait(const NatsClient& client) {
  jsOptions o;
  jsOptions_Init(&o);
  o.Wait = client.request_timeout_ms();
  return o;
}

}  // namespace

Message::Message(natsMsg* msg) : msg_(msg) {
  // Our own reading of the ack subject (both formats, common/ack_subject.h) rather than
  // natsMsg_GetMetaData, so what we accept is unit tested here.
  const char* reply = natsMsg_GetReply(msg_);
  if (auto meta = ack_subject::Parse(reply != nullptr ? reply : "")) {
    stream_ = std::string(meta->stream);
    stream_seq_ = meta->stream_seq;
    num_delivered_ = meta->delivered;
    timestamp_ns_ = meta->timestamp_ns;
  }
}

Message::~Message() {
  if (msg_ != nullptr) natsMsg_Destroy(msg_);
}

Message::Message(Message&& o) noexcept
    : msg_(std::exchange(o.msg_, nullptr)),
      stream_(std::move(o.stream_)),
      stream_seq_(o.stream_seq_),
      num_delivered_(o.num_delivered_),
      timestamp_ns_(o.timestamp_ns_) {}

Message& Message::operator=(Message&& o) noexcept {
  if (this != &o) {
    if (msg_ != nullptr) natsMsg_Destroy(msg_);
    msg_ = std::exchange(o.msg_, nullptr);
    stream_ = std::move(o.stream_);
    stream_seq_ = o.stream_seq_;
    num_delivered_ = o.num_delivered_;
    timestamp_ns_ = o.timestamp_ns_;
  }
  return *this;
}

std::string_view Message::subject() const {
  const char* s = natsMsg_GetSubject(msg_);
  return s ? s : "";
}

std::string_view Message::reply() const {
  const char* r = natsMsg_GetReply(msg_);
  return r ? r : "";
}

std::string_view Message::data() const {
  const char* d = natsMsg_GetData(msg_);
  return d ? std::string_view(d, static_cast<size_t>(natsMsg_GetDataLength(msg_)))
           : std::string_view();
}

std::optional<std::string> Message::Header(const std::string& key) const {
  auto v = HeaderView(key.c_str());
  if (!v) return std::nullopt;
  return std::string(*v);
}

std::optional<std::string_view> Message::HeaderView(const char* key) const {
  const char* v = nullptr;
  if (natsMsgHeader_Get(msg_, key, &v) != NATS_OK || v == nullptr) return std::nullopt;
  return std::string_view(v);
}

void Message::ForEachHeader(const std::function<void(const char*, const char*)>& fn) const {
  const char** keys = nullptr;
  int count = 0;
  if (natsMsgHeader_Keys(msg_, &keys, &count) != NATS_OK) return;
  for (int i = 0; i < count; ++i) {
    const char** values = nullptr;
    int n = 0;
    if (natsMsgHeader_Values(msg_, keys[i], &values, &n) == NATS_OK) {
      for (int j = 0; j < n; ++j) fn(keys[i], values[j]);
      free(values);
    }
  }
  free(keys);
}

size_t Message::HeaderBytes() const {
  size_t bytes = 0;
  ForEachHeader([&](const char* k, const char* v) { bytes += strlen(k) + strlen(v) + 4; });
  return bytes;
}

Headers Message::AllHeaders() const {
  Headers out;
  ForEachHeader([&](const char* k, const char* v) { out.emplace_back(k, v); });
  return out;
}

Status Message::Ack() {
  natsStatus s = natsMsg_Ack(msg_, nullptr);
  return s == NATS_OK ? Status::Ok() : Status(NatsError(s, "ack"));
}

Status Message::AckOn(NatsClient& client) {
  const char* reply = natsMsg_GetReply(msg_);
  if (reply == nullptr || *reply == 0) return Error::Invalid("ack: not a JetStream message");
  natsStatus s = natsConnection_Publish(client.conn(), reply, "+ACK", 4);
  return s == NATS_OK ? Status::Ok() : Status(NatsError(s, "ack"));
}

Status Message::AckSync() {
  jsErrCode jerr = static_cast<jsErrCode>(0);
  natsStatus s = natsMsg_AckSync(msg_, nullptr, &jerr);
  return s == NATS_OK ? Status::Ok() : Status(NatsError(s, "ack", jerr));
}

Status Message::Nak(Millis delay) {
  natsStatus s = delay.count() > 0 ? natsMsg_NakWithDelay(msg_, delay.count(), nullptr)
                                   : natsMsg_Nak(msg_, nullptr);
  return s == NATS_OK ? Status::Ok() : Status(NatsError(s, "nak"));
}

Status Message::InProgress() {
  natsStatus s = natsMsg_InProgress(msg_, nullptr);
  return s == NATS_OK ? Status::Ok() : Status(NatsError(s, "in-progress ack"));
}

Status Message::Term() {
  natsStatus s = natsMsg_Term(msg_, nullptr);
  return s == NATS_OK ? Status::Ok() : Status(NatsError(s, "term"));
}

Result<std::unique_ptr<PullConsumer>> PullConsumer::Bind(NatsClient& client,
                                                         const ConsumerSpec& spec) {
  if (spec.filter_subject.empty()) {
    return Error::Invalid("bind consumer " + spec.durable + ": a filter subject is required");
  }
  jsConsumerConfig cc;
  jsConsumerConfig_Init(&cc);
  cc.Durable = spec.durable.c_str();
  cc.AckPolicy = js_AckExplicit;
  cc.AckWait = spec.ack_wait.count() * 1'000'000;
  cc.MaxAckPending = spec.max_ack_pending;
  cc.MaxDeliver = spec.max_deliver;
  cc.FilterSubject = spec.filter_subject.c_str();
  jsSubOptions so;
  jsSubOptions_Init(&so);
  so.Stream = spec.stream.c_str();
  so.Config = cc;
  jsOptions jo = Wait(client);
  std::unique_ptr<PullConsumer> c(new PullConsumer());
  c->what_ = "consumer " + spec.durable + " on " + spec.stream;
  c->client_ = &client;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  natsStatus s = js_PullSubscribe(&c->sub_, client.js(), spec.filter_subject.c_str(),
                                  spec.durable.c_str(), &jo, &so, &jerr);
  if (s != NATS_OK) return NatsError(s, "bind " + c->what_, jerr);
  if (spec.pending_bytes_limit > 0) {
    int msgs = 0, bytes = 0;
    s = natsSubscription_GetPendingLimits(c->sub_, &msgs, &bytes);
    if (s == NATS_OK) {
      const auto want = static_cast<int>(
          std::min<int64_t>(spec.pending_bytes_limit, std::numeric_limits<int>::max()));
      s = natsSubscription_SetPendingLimits(c->sub_, msgs, std::max(bytes, want));
    }
    if (s != NATS_OK) return NatsError(s, "pending limits of " + c->what_);
  }
  return c;
}

PullConsumer::~PullConsumer() {
  // Destroy without Unsubscribe: unsubscribing a durable pull subscription deletes the consumer.
  if (sub_ != nullptr) natsSubscription_Destroy(sub_);
}

size_t PullConsumer::TakeHeld(std::vector<Message>* out, int max, int64_t max_bytes) {
  // nats.c 3.4's fetch hands out the messages its subscription already holds (answers to an
  // earlier request that came after it stopped waiting) and then asks the server for the batch
  // minus those; when more arrive than that, it writes past the end of its message array and
  // corrupts the heap (fixed upstream in nats.c 3.10, #749; seen here as "corrupted
  // double-linked list" under load). So held messages are taken first, one per call: batch 1
  // and a 1-byte limit, so the call never waits and asks the server for nothing it could send.
  size_t taken = 0;
  int64_t bytes = 0;
  while (static_cast<int>(taken) < max && (max_bytes <= 0 || bytes < max_bytes)) {
    int held = 0, held_bytes = 0;
    if (natsSubscription_GetPending(sub_, &held, &held_bytes) != NATS_OK || held <= 0) break;
    jsFetchRequest req;
    jsFetchRequest_Init(&req);
    req.Batch = 1;
    req.MaxBytes = 1;
    req.NoWait = true;
    natsMsgList list{};
    natsStatus s = natsSubscription_FetchRequest(&list, sub_, &req);
    if (s != NATS_OK || list.Count != 1) {  // only status messages were held
      natsMsgList_Destroy(&list);
      break;
    }
    out->emplace_back(list.Msgs[0]);
    list.Msgs[0] = nullptr;  // now owned by the Message
    natsMsgList_Destroy(&list);
    bytes += static_cast<int64_t>(out->back().data().size());
    ++taken;
  }
  return taken;
}

Status PullConsumer::RefuseWhileDisconnected() const {
  if (client_->Connected()) return Status::Ok();
  return Error::Retryable("fetch from " + what_ +
                          ": not connected to NATS (no pull request is queued meanwhile)");
}

Result<std::vector<Message>> PullConsumer::Fetch(int batch, Millis timeout) {
  std::vector<Message> out;
  if (TakeHeld(&out, batch, 0) > 0) return out;  // see TakeHeld: never with a request
  if (auto st = RefuseWhileDisconnected(); !st) return st.error();
  natsMsgList list{};
  jsErrCode jerr = static_cast<jsErrCode>(0);
  natsStatus s = natsSubscription_Fetch(&list, sub_, batch, timeout.count(), &jerr);
  if (s == NATS_TIMEOUT) return out;
  if (s != NATS_OK) {
    natsMsgList_Destroy(&list);
    return NatsError(s, "fetch from " + what_, jerr);
  }
  out.reserve(static_cast<size_t>(list.Count));
  for (int i = 0; i < list.Count; ++i) {
    out.emplace_back(list.Msgs[i]);
    list.Msgs[i] = nullptr;  // now owned by the Message
  }
  natsMsgList_Destroy(&list);
  return out;
}

std::vector<Message> PullConsumer::TakeUnclaimed() {
  std::vector<Message> out;
  TakeHeld(&out, std::numeric_limits<int>::max(), 0);
  return out;
}

Result<Fetched> PullConsumer::Fetch(int batch, int64_t max_bytes, Millis timeout) {
  Fetched out;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  // As natsSubscription_Fetch does: first ask for what is there now (no_wait), and only when
  // there is nothing wait for the first message, so a partial batch does not wait the timeout.
  bool no_wait = batch > 1;
  while (true) {
    // What nats.c already holds goes out first, alone (TakeHeld), and counts against max_bytes.
    if (TakeHeld(&out.messages, batch, max_bytes) > 0) return out;
    if (auto st = RefuseWhileDisconnected(); !st) return st.error();
    jsFetchRequest req;
    jsFetchRequest_Init(&req);
    req.Batch = batch;
    req.NoWait = no_wait;
    const auto left =
        std::chrono::duration_cast<Millis>(deadline - std::chrono::steady_clock::now());
    req.Expires = std::max<int64_t>(left.count(), 1) * 1'000'000;
    req.MaxBytes = std::max<int64_t>(max_bytes, 0);
    natsMsgList list{};
    natsStatus s = natsSubscription_FetchRequest(&list, sub_, &req);
    if (s == NATS_OK) {
      out.messages.reserve(static_cast<size_t>(list.Count));
      for (int i = 0; i < list.Count; ++i) {
        out.messages.emplace_back(list.Msgs[i]);
        list.Msgs[i] = nullptr;  // now owned by the Message
      }
      natsMsgList_Destroy(&list);
      return out;
    }
    natsMsgList_Destroy(&list);
    if (s == NATS_TIMEOUT) return out;
    if (s == NATS_NOT_FOUND && no_wait) {  // nothing there now: wait for the first
      no_wait = false;
      continue;
    }
    if (s == NATS_NOT_FOUND) return out;
    const char* last = nats_GetLastError(nullptr);
    if (s == NATS_ERR && last != nullptr && std::strstr(last, "Exceeds MaxBytes") != nullptr) {
      // The server's 409 "Message Size Exceeds MaxBytes": the next message does not fit.
      out.next_exceeds_max_bytes = true;
      return out;
    }
    return NatsError(s, "fetch from " + what_);
  }
}

Result<PubAck> PublishSync(NatsClient& client, const OutMessage& m) {
  natsMsg* raw = nullptr;
  natsStatus s = natsMsg_Create(&raw, m.subject.c_str(), nullptr, m.data.data(),
                                static_cast<int>(m.data.size()));
  if (s != NATS_OK) return NatsError(s, "publish to " + m.subject);
  NatsMsgPtr msg(raw);
  for (const auto& [k, v] : m.headers) {
    if (s = natsMsgHeader_Add(msg.get(), k.c_str(), v.c_str()); s != NATS_OK) {
      return NatsError(s, "header " + k);
    }
  }
  jsPubOptions po;
  jsPubOptions_Init(&po);
  po.MaxWait = client.request_timeout_ms();
  if (!m.msg_id.empty()) po.MsgId = m.msg_id.c_str();
  if (!m.expect_stream.empty()) po.ExpectStream = m.expect_stream.c_str();
  jsPubAck* pa = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  s = js_PublishMsg(&pa, client.js(), msg.get(), &po, &jerr);
  if (s != NATS_OK) return NatsError(s, "publish to " + m.subject, jerr);
  PubAck ack{pa->Stream ? pa->Stream : "", pa->Sequence, pa->Duplicate};
  jsPubAck_Destroy(pa);
  return ack;
}

bool IsMessageTooLarge(const Error& e) {
  // nats.c refuses a message above the server's max payload before sending it; a stream refuses
  // one above its max_msg_size with err_code 10054.
  return e.client_status == NATS_MAX_PAYLOAD || e.code == js_error::kMessageTooLarge;
}

}  // namespace common
