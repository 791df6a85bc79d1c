#include "common/nats_async.h"

#include <nats/nats.h>

#include "common/nats_status.h"

namespace common {
namespace {

void AckHandler(jsCtx* js, natsMsg* msg, jsPubAck* pa, jsPubAckErr* pae, void* closure);

}  // namespace

struct AsyncPublisherAccess {
  static void Complete(AsyncPublisher* p, natsMsg* msg, const Status& s) { p->Complete(msg, s); }
};

namespace {

void AckHandler(jsCtx*, natsMsg* msg, jsPubAck* pa, jsPubAckErr* pae, void* closure) {
  auto* self = static_cast<AsyncPublisher*>(closure);
  if (pa != nullptr && pae == nullptr) {
    AsyncPublisherAccess::Complete(self, msg, Status::Ok());
  } else {
    natsStatus err = pae != nullptr ? pae->Err : NATS_ERR;
    jsErrCode code = pae != nullptr ? pae->ErrCode : static_cast<jsErrCode>(0);
    std::string text = pae != nullptr && pae->ErrText != nullptr ? pae->ErrText : "";
    Error e = NatsError(err, "async publish" + (text.empty() ? "" : " (" + text + ")"), code);
    AsyncPublisherAccess::Complete(self, msg, Status(e));
  }
  natsMsg_Destroy(msg);
}

}  // namespace

Result<std::unique_ptr<AsyncPublisher>> AsyncPublisher::Create(NatsClient& client, Completion done,
                                                               int max_pending) {
  std::unique_ptr<AsyncPublisher> p(new AsyncPublisher());
  p->done_ = std::move(done);
  p->max_wait_ms_ = client.request_timeout_ms();
  jsOptions o;
  jsOptions_Init(&o);
  o.Wait = client.request_timeout_ms();
  o.PublishAsync.MaxPending = max_pending;
  o.PublishAsync.AckHandler = AckHandler;
  o.PublishAsync.AckHandlerClosure = p.get();
  natsStatus s = natsConnection_JetStream(&p->js_, client.conn(), &o);
  if (s != NATS_OK) return NatsError(s, "JetStream context for async publishing");
  return p;
}

AsyncPublisher::~AsyncPublisher() {
  if (js_ != nullptr) {
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MaxWait = 2000;
    js_PublishAsyncComplete(js_, &po);  // let outstanding acks arrive before the handler dies
    jsCtx_Destroy(js_);
  }
}

void AsyncPublisher::Complete(natsMsg* msg, const Status& status) {
  uint64_t tag = 0;
  {
    std::lock_guard lock(mu_);
    auto it = tags_.find(msg);
    if (it == tags_.end()) return;
    tag = it->second;
    tags_.erase(it);
  }
  done_(tag, status);
}

Status AsyncPublisher::Publish(const OutMessage& m, uint64_t tag) {
  natsMsg* msg = nullptr;
  natsStatus s = natsMsg_Create(&msg, m.subject.c_str(), nullptr, m.data.data(),
                                static_cast<int>(m.data.size()));
  if (s != NATS_OK) return NatsError(s, "publish to " + m.subject);
  for (const auto& [k, v] : m.headers) {
    if (s = natsMsgHeader_Add(msg, k.c_str(), v.c_str()); s != NATS_OK) {
      natsMsg_Destroy(msg);
      return NatsError(s, "header " + k);
    }
  }
  jsPubOptions po;
  jsPubOptions_Init(&po);
  po.MaxWait = max_wait_ms_;
  if (!m.msg_id.empty()) po.MsgId = m.msg_id.c_str();
  if (!m.expect_stream.empty()) po.ExpectStream = m.expect_stream.c_str();
  natsMsg* key = msg;
  {
    std::lock_guard lock(mu_);
    tags_[key] = tag;
  }
  s = js_PublishMsgAsync(js_, &msg, &po);
  if (s != NATS_OK) {
    {
      std::lock_guard lock(mu_);
      tags_.erase(key);
    }
    if (msg != nullptr) natsMsg_Destroy(msg);  // still ours when the call failed
    return NatsError(s, "publish to " + m.subject);
  }
  return Status::Ok();
}

}  // namespace common
