#include "platformctl/dlq/nats.h"

#include <nats/nats.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <utility>

#include <nlohmann/json.hpp>

#include "common/js_error.h"
#include "common/message.h"
#include "common/nats_status.h"
#include "platformctl/dlq/nats_get.h"
#include "platformctl/nats_admin.h"

namespace platformctl::nats_dlq {

using detail::GetBody;
using detail::kMaxWindow;
using detail::ParseGet;
using detail::RequestAllRetrying;

std::optional<std::string> StoredMessage::Header(std::string_view key) const {
  return common::FindHeader(headers, key);
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
    Error e = NatsError(err,
                        std::string("publish to ") + (subject ? subject : "?") +
                            (text.empty() ? "" : " (" + text + ")"),
                        code);
    if (code == JSClusterNotAvailErr) e.kind = ErrorKind::kRetryable;  // an election: it passes
    BatchPublisherAccess::Acked(self, msg, std::move(e));
  }
  natsMsg_Destroy(msg);
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

RefusedErase JudgeRefusedErase(int tries, const Error& refusal, std::optional<bool> held) {
  if (tries <= 1) return RefusedErase::kStands;
  if (refusal.kind == ErrorKind::kNotFound) return RefusedErase::kErased;
  if (refusal.code != js_error::kStreamMsgDeleteFailed &&
      refusal.code != js_error::kSequenceNotFound) {
    return RefusedErase::kStands;
  }
  if (!held) return RefusedErase::kReadStream;
  return *held ? RefusedErase::kStands : RefusedErase::kErased;
}

std::vector<Status> EraseAll(NatsClient& client, const std::string& stream,
                             const std::vector<uint64_t>& seqs, Millis timeout) {
  std::vector<std::string> bodies;
  bodies.reserve(seqs.size());
  for (uint64_t seq : seqs) {
    bodies.push_back("{\"seq\":" + std::to_string(seq) + "}");  // no "no_erase": erase
  }
  std::vector<int> tries;
  const std::string what = "erase " + stream;
  auto answers = RequestAllRetrying(client, "$JS.API.STREAM.MSG.DELETE." + stream, bodies, timeout,
                                    what, &tries);
  std::vector<Status> out;
  out.reserve(seqs.size());
  std::vector<size_t> unsure;  // retries refused as gone: the stream says whether they are
  for (size_t i = 0; i < seqs.size(); ++i) {
    const std::string one = what + " #" + std::to_string(seqs[i]);
    if (!answers) {
      out.push_back(answers.error());
      continue;
    }
    const std::string& a = (*answers)[i];
    if (auto e = nats_admin::ApiError(a, one)) {
      // Gone on a second try: the first one, whose answer was lost, may have erased it.
      const RefusedErase verdict = JudgeRefusedErase(tries[i], *e, std::nullopt);
      if (verdict == RefusedErase::kErased) {
        out.push_back(Status::Ok());
      } else {
        out.push_back(*e);
        if (verdict == RefusedErase::kReadStream) unsure.push_back(i);
      }
      continue;
    }
    auto j = nlohmann::json::parse(a, nullptr, false);
    if (j.is_object() && j.value("success", false)) {
      out.push_back(Status::Ok());
    } else {
      out.push_back(Error::Permanent(one + ": an answer that is not the JetStream API's"));
    }
  }
  if (unsure.empty()) return out;
  std::vector<uint64_t> look;
  for (size_t i : unsure) look.push_back(seqs[i]);
  const std::vector<Result<bool>> held = GetAll(client, stream, look, timeout);
  for (size_t k = 0; k < unsure.size(); ++k) {
    const size_t i = unsure[k];
    const Error refusal = out[i].error();
    if (!held[k]) {  // unknown whether it is gone: the refusal stands
      out[i] = refusal.Retold(refusal.message + "; reading it back: " + held[k].error().message);
    } else if (JudgeRefusedErase(tries[i], refusal, *held[k]) == RefusedErase::kErased) {
      out[i] = Status::Ok();
    } else {
      out[i] = refusal.Retold(refusal.message + "; the stream still holds it");
    }
  }
  return out;
}

Result<std::optional<StoredMessage>> GetOne(NatsClient& client, const std::string& stream,
                                            uint64_t seq) {
  const std::string what = "read " + stream + " #" + std::to_string(seq);
  auto answers = RequestAllRetrying(client, "$JS.API.STREAM.MSG.GET." + stream, {GetBody(seq, "")},
                                    Millis(client.request_timeout_ms()), what);
  if (!answers) return answers.error();
  return ParseGet((*answers)[0], what, true);
}

std::vector<Result<bool>> GetAll(NatsClient& client, const std::string& stream,
                                 const std::vector<uint64_t>& seqs, Millis timeout) {
  std::vector<Result<bool>> out;
  const std::string what = "read " + stream;
  for (size_t at = 0; at < seqs.size(); at += kMaxWindow) {
    std::vector<std::string> bodies;
    for (size_t i = at; i < std::min(seqs.size(), at + kMaxWindow); ++i) {
      bodies.push_back(GetBody(seqs[i], ""));
    }
    auto answers =
        RequestAllRetrying(client, "$JS.API.STREAM.MSG.GET." + stream, bodies, timeout, what);
    for (size_t i = 0; i < bodies.size(); ++i) {
      if (!answers) {
        out.push_back(answers.error());
        continue;
      }
      auto m = ParseGet((*answers)[i], what + " #" + std::to_string(seqs[at + i]), false);
      if (!m) {
        out.push_back(m.error());
      } else {
        out.push_back(m->has_value());
      }
    }
  }
  return out;
}

}  // namespace platformctl::nats_dlq
