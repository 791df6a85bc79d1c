#include "common/nats_async.h"

#include <nats/nats.h>

#include <charconv>

#include "common/js_error.h"
#include "common/nats_status.h"
#include "common/pub_answer.h"

namespace common {

struct AsyncPublisherAccess {
  static void OnAnswer(AsyncPublisher* p, natsMsg* msg) { p->OnAnswer(msg); }
  static void OnClosed(AsyncPublisher* p) {
    std::lock_guard lock(p->mu_);
    p->sub_done_ = true;
    p->sub_done_cv_.notify_all();
  }
};

namespace {

// How often the timeout thread looks for publishes past their deadline: a timeout completes at
// most this late.
constexpr std::chrono::milliseconds kExpireEvery{100};
constexpr std::chrono::milliseconds kDrainAtEnd{2000};

void OnMsg(natsConnection*, natsSubscription*, natsMsg* msg, void* closure) {
  AsyncPublisherAccess::OnAnswer(static_cast<AsyncPublisher*>(closure), msg);
}

void OnSubClosed(void* closure) {
  AsyncPublisherAccess::OnClosed(static_cast<AsyncPublisher*>(closure));
}

}  // namespace

Result<std::unique_ptr<AsyncPublisher>> AsyncPublisher::Create(NatsClient& client, Completion done,
                                                               int max_pending) {
  std::unique_ptr<AsyncPublisher> p(new AsyncPublisher());
  p->client_ = &client;
  p->done_ = std::move(done);
  p->max_wait_ = std::chrono::milliseconds(client.request_timeout_ms());
  p->max_pending_ = static_cast<size_t>(std::max(1, max_pending));
  // Under the connection's inbox prefix: a deployed service may subscribe only there.
  auto inbox = client.NewInbox();
  if (!inbox) return inbox.error();
  p->inbox_ = *inbox + ".";
  std::string wildcard = p->inbox_ + "*";
  natsStatus s =
      natsConnection_Subscribe(&p->sub_, client.conn(), wildcard.c_str(), OnMsg, p.get());
  if (s != NATS_OK) return NatsError(s, "subscribe to the answers of async publishes");
  // The answers are small and each one frees a place: never drop one as a slow consumer.
  if (s = natsSubscription_SetPendingLimits(p->sub_, -1, -1); s == NATS_OK) {
    s = natsSubscription_SetOnCompleteCB(p->sub_, OnSubClosed, p.get());
  }
  if (s != NATS_OK) {
    // Unsubscribed first: a subscription only destroyed would stay on the connection and hand
    // later answers to the freed publisher.
    natsSubscription_Unsubscribe(p->sub_);
    natsSubscription_Destroy(p->sub_);
    p->sub_ = nullptr;
    return NatsError(s, "answers of async publishes");
  }
  p->expirer_ = std::thread([raw = p.get()] { raw->ExpireLoop(); });
  return p;
}

AsyncPublisher::~AsyncPublisher() {
  {
    std::unique_lock lock(mu_);
    // Let the answers still due arrive, as nats.c's js_PublishAsyncComplete did.
    room_cv_.wait_for(lock, kDrainAtEnd, [&] { return due_.empty(); });
    stopping_ = true;
  }
  stop_cv_.notify_all();
  room_cv_.notify_all();
  if (expirer_.joinable()) expirer_.join();
  if (sub_ != nullptr) {
    // After this no answer reaches OnAnswer: the subscription's thread has ended its callbacks.
    if (natsSubscription_Unsubscribe(sub_) == NATS_OK) {
      std::unique_lock lock(mu_);
      sub_done_cv_.wait_for(lock, kDrainAtEnd, [&] { return sub_done_; });
    }
    natsSubscription_Destroy(sub_);
  }
}

bool AsyncPublisher::Take(uint64_t id, uint64_t* tag) {
  std::lock_guard lock(mu_);
  auto it = due_.find(id);
  if (it == due_.end()) return false;
  *tag = it->second.tag;
  due_.erase(it);
  room_cv_.notify_all();
  return true;
}

Status AsyncPublisher::Publish(const OutMessage& m, uint64_t tag) {
  uint64_t id = 0;
  {
    std::unique_lock lock(mu_);
    if (due_.size() >= max_pending_ && !room_cv_.wait_for(lock, max_wait_, [&] {
          return due_.size() < max_pending_ || stopping_;
        })) {
      return Error::Retryable("publish to " + m.subject + ": " + std::to_string(max_pending_) +
                              " publishes still await the server's answer");
    }
    if (stopping_) return Error::Retryable("publish to " + m.subject + ": publisher stopping");
    // Completed entries leave the front of the deadline queue here, so it holds about the
    // publishes under way rather than every publish of the last request timeout.
    while (!order_.empty() && due_.count(order_.front().second) == 0) order_.pop_front();
    id = next_id_++;
    auto deadline = Clock::now() + max_wait_;
    due_.emplace(id, Due{tag, deadline});
    order_.emplace_back(deadline, id);
  }
  char digits[24];
  auto end = std::to_chars(digits, digits + sizeof digits, id).ptr;
  std::string reply;
  reply.reserve(inbox_.size() + static_cast<size_t>(end - digits));
  reply.append(inbox_).append(digits, end);
  natsStatus s = NATS_OK;
  if (m.headers.empty() && m.msg_id.empty() && m.expect_stream.empty()) {
    s = natsConnection_PublishRequest(client_->conn(), m.subject.c_str(), reply.c_str(),
                                      m.data.data(), static_cast<int>(m.data.size()));
  } else {
    natsMsg* msg = nullptr;
    s = natsMsg_Create(&msg, m.subject.c_str(), reply.c_str(), m.data.data(),
                       static_cast<int>(m.data.size()));
    for (const auto& [k, v] : m.headers) {
      if (s == NATS_OK) s = natsMsgHeader_Add(msg, k.c_str(), v.c_str());
    }
    if (s == NATS_OK && !m.msg_id.empty())
      s = natsMsgHeader_Set(msg, "Nats-Msg-Id", m.msg_id.c_str());
    if (s == NATS_OK && !m.expect_stream.empty()) {
      s = natsMsgHeader_Set(msg, "Nats-Expected-Stream", m.expect_stream.c_str());
    }
    if (s == NATS_OK) s = natsConnection_PublishMsg(client_->conn(), msg);
    natsMsg_Destroy(msg);
  }
  if (s != NATS_OK) {
    uint64_t unused = 0;
    // Not written: no answer will come. (Taken already only if its deadline passed meanwhile,
    // and then its completion has been given.)
    if (Take(id, &unused)) return NatsError(s, "publish to " + m.subject);
  }
  return Status::Ok();
}

void AsyncPublisher::OnAnswer(natsMsg* msg) {
  std::string_view subject = natsMsg_GetSubject(msg);
  uint64_t id = 0, tag = 0;
  bool ours = subject.size() > inbox_.size() && subject.substr(0, inbox_.size()) == inbox_;
  if (ours) {
    auto digits = subject.substr(inbox_.size());
    auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), id);
    ours = ec == std::errc() && p == digits.data() + digits.size();
  }
  if (!ours || !Take(id, &tag)) {  // not one of ours, or late: its timeout was given
    natsMsg_Destroy(msg);
    return;
  }
  Status st = Status::Ok();
  if (natsMsg_IsNoResponders(msg)) {
    st = NatsError(NATS_NO_RESPONDERS, "async publish (no stream takes this subject)");
  } else {
    PubAnswer a = ReadPubAnswer(
        std::string_view(natsMsg_GetData(msg), static_cast<size_t>(natsMsg_GetDataLength(msg))));
    if (a.kind == PubAnswer::Kind::kRefused) {
      // 10077: the stream is at its max_bytes and refuses new messages (discard new). Said in
      // words, since it is the publisher's to act on (docs/contract.md §2, storage limits).
      const std::string why = a.err_code == js_error::kStoreFailed
                                  ? "async publish refused, the stream is full: " + a.description +
                                        "; it takes messages again once its consumer removes some"
                                  : "async publish (" + a.description + ")";
      Error e = NatsError(NATS_ERR, why, static_cast<jsErrCode>(a.err_code));
      // 2.11+ answers 429 when the stream's ingest queue is full: publish again later.
      if (js_error::IsTooManyRequests(a.status, a.err_code)) e.kind = ErrorKind::kRetryable;
      st = e;
    } else if (a.kind == PubAnswer::Kind::kUnreadable) {
      // Whether the stream stored it is unknown: the caller publishes again (idempotent).
      st = Error::Retryable("async publish: " + a.description);
    }
  }
  natsMsg_Destroy(msg);
  done_(tag, st);
}

void AsyncPublisher::ExpireLoop() {
  std::vector<uint64_t> expired;
  std::unique_lock lock(mu_);
  while (!stopping_) {
    stop_cv_.wait_for(lock, kExpireEvery, [&] { return stopping_; });
    auto now = Clock::now();
    expired.clear();
    while (!order_.empty() && order_.front().first <= now) {
      auto it = due_.find(order_.front().second);
      order_.pop_front();
      if (it == due_.end()) continue;  // answered
      expired.push_back(it->second.tag);
      due_.erase(it);
    }
    if (expired.empty()) continue;
    room_cv_.notify_all();
    lock.unlock();
    for (uint64_t tag : expired) {
      done_(tag, NatsError(NATS_TIMEOUT, "async publish: no answer within " +
                                             std::to_string(max_wait_.count()) + " ms"));
    }
    lock.lock();
  }
}

}  // namespace common
