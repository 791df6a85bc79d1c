// StreamBrowser (dlq/nats.h): a walk over a stream through a push consumer of its own, with
// message gets as the way on when no consumer can be had.
//
// Why not nats.c's ordered consumer: it is an R1 ephemeral, which nats-server 2.9 places on a
// random replica of the stream, dead ones included. Placed on a node that is down, its creation
// is never answered and its assignment stays behind (with no name in the consumer list, which
// nats.c then refuses). This consumer has as many replicas as the stream: every replica holds
// it, so it is created and keeps delivering with one of three down; it is named, deleted when
// the walk ends, and removed by the server 30 s after its deliver subject lost interest when
// platformctl died. Its messages come in order (AckNone, flow control, heartbeats); a gap in
// the consumer sequence, or 3 s without a message or heartbeat (its leader died or was paused),
// starts a new one from the last stream sequence seen. Message gets are slower (a request per
// message, each answer JSON with base64), so they only take over when consumers keep failing.
#include <nats/nats.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <map>

#include <nlohmann/json.hpp>

#include "common/nats_msg_ptr.h"
#include "common/nats_status.h"
#include "platformctl/dlq/nats.h"
#include "platformctl/dlq/nats_get.h"
#include "platformctl/nats_admin.h"

namespace platformctl::nats_dlq {
namespace {

using detail::FirstSeqAtOrAfter;
using detail::GetBody;
using detail::kMaxWindow;
using detail::ParseGet;
using detail::RequestAllRetrying;

struct MetaDeleter {
  void operator()(jsMsgMetaData* m) const { jsMsgMetaData_Destroy(m); }
};

constexpr int64_t kHeartbeatNs = 1'000'000'000;
constexpr int64_t kInactiveNs = 30'000'000'000;
constexpr int kQuietWaits = 3;  // one-second waits without anything: the consumer is gone
constexpr int kMaxResets = 5;   // new consumers without a message in between: use gets

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

std::optional<uint64_t> HeaderNumber(natsMsg* msg, const char* key) {
  const char* v = nullptr;
  if (natsMsgHeader_Get(msg, key, &v) != NATS_OK || v == nullptr) return std::nullopt;
  uint64_t n = 0;
  if (std::from_chars(v, v + std::strlen(v), n).ec != std::errc()) return std::nullopt;
  return n;
}

}  // namespace

Result<std::unique_ptr<StreamBrowser>> StreamBrowser::Open(NatsClient& client,
                                                           const BrowseSpec& spec) {
  std::unique_ptr<StreamBrowser> b(new StreamBrowser());
  b->spec_ = spec;
  b->client_ = &client;
  b->cursor_ = std::max<uint64_t>(spec.start_seq, 1);
  if (spec.end_seq == 0 || spec.end_seq < b->cursor_) {
    b->done_ = true;  // nothing to walk
    return b;
  }
  if (spec.start_time_ns > 0) {
    auto start = FirstSeqAtOrAfter(client, spec, b->cursor_, spec.end_seq);
    if (!start) return start.error();
    b->cursor_ = *start;
    if (b->cursor_ > spec.end_seq) {
      b->done_ = true;
      return b;
    }
  }
  // A consumer refused (e.g. the stream's consumer limit): message gets. A cluster that did not
  // answer within the patience would not answer them either: that is the walk's error.
  if (auto s = b->Start(); !s) {
    if (s.error().kind == ErrorKind::kRetryable) return s.error();
    b->gets_ = true;
  }
  return b;
}

StreamBrowser::~StreamBrowser() { Stop(); }

Status StreamBrowser::Start() {
  auto inbox = client_->NewInbox();
  if (!inbox) return inbox.error();
  natsSubscription* raw = nullptr;
  natsStatus s = natsConnection_SubscribeSync(&raw, client_->conn(), inbox->c_str());
  if (s != NATS_OK) return NatsError(s, "read " + spec_.stream + ": subscription");
  sub_ = raw;
  // Flow control keeps what is pending here small; the limits only guard against a burst.
  natsSubscription_SetPendingLimits(sub_, 1 << 20, 512 << 20);
  consumer_ = "platformctl_" + inbox->substr(inbox->rfind('.') + 1);
  last_cseq_ = 0;
  quiet_ = 0;
  nlohmann::json cfg = {{"name", consumer_},
                        {"deliver_subject", *inbox},
                        {"deliver_policy", "by_start_sequence"},
                        {"opt_start_seq", cursor_},
                        {"ack_policy", "none"},
                        {"filter_subject", spec_.filter_subject},
                        {"replay_policy", "instant"},
                        {"flow_control", true},
                        {"idle_heartbeat", kHeartbeatNs},
                        {"headers_only", spec_.headers_only},
                        {"mem_storage", true},
                        {"num_replicas", std::max(1, spec_.replicas)},
                        {"inactive_threshold", kInactiveNs}};
  nlohmann::json body = {{"stream_name", spec_.stream}, {"config", cfg}};
  nats_admin::Patience patience;
  auto answer =
      nats_admin::ApiRequest(*client_, "$JS.API.CONSUMER.CREATE." + spec_.stream + "." + consumer_,
                             body.dump(), "read " + spec_.stream + ": consumer", patience);
  if (!answer) {
    Stop(Millis(2000));  // a create whose answer was lost may have made it
    return answer.error();
  }
  if (detail::NothingToDeliver(*answer)) return ConsumerSaysDone();
  return Status::Ok();
}

void StreamBrowser::Stop(Millis patience_limit) {
  if (sub_ != nullptr) {
    // The push consumer may be delivering right now: quiesce before the subscription goes.
    DestroySubscription(*client_, sub_, /*quiesce=*/true);
    sub_ = nullptr;
  }
  if (consumer_.empty()) return;
  // Deleted now; should this fail, the server removes it once its inactive threshold passed,
  // and the operator, who may list consumers meanwhile, is told so. Not found: a create whose
  // answer was lost did not make it, or the server removed it already.
  nats_admin::Patience patience(patience_limit);
  auto deleted =
      nats_admin::ApiRequest(*client_, "$JS.API.CONSUMER.DELETE." + spec_.stream + "." + consumer_,
                             "", "read " + spec_.stream + ": remove its consumer", patience);
  if (!deleted && deleted.error().kind != ErrorKind::kNotFound) {
    spdlog::warn("{}; consumer {} stays on {} until the server removes it, {} s after this walk",
                 deleted.error().message, consumer_, spec_.stream, kInactiveNs / 1'000'000'000);
  }
  consumer_.clear();
}

Status StreamBrowser::Reset() {
  Stop();
  if (++resets_ > kMaxResets) {
    gets_ = true;  // consumers keep failing: go on with message gets
    return Status::Ok();
  }
  if (auto s = Start(); !s) {
    if (s.error().kind == ErrorKind::kRetryable) return s;
    gets_ = true;
  }
  return Status::Ok();
}

Status StreamBrowser::Receive() {
  natsMsg* raw = nullptr;
  natsStatus s = natsSubscription_NextMsg(&raw, sub_, 1000);
  if (s == NATS_TIMEOUT) {
    if (++quiet_ >= kQuietWaits) return Reset();  // no heartbeat: its leader is gone
    return Status::Ok();
  }
  if (s != NATS_OK) return Reset();  // e.g. a slow consumer dropped messages
  common::NatsMsgPtr msg(raw);
  quiet_ = 0;
  const char* status = nullptr;
  if (natsMsgHeader_Get(raw, "Status", &status) == NATS_OK) {
    // Flow control asks for an answer on its reply subject; a heartbeat may name one too
    // (the consumer is stalled waiting for it), and says how far the consumer got.
    const char* reply = natsMsg_GetReply(raw);
    const char* stalled = nullptr;
    if (natsMsgHeader_Get(raw, "Nats-Consumer-Stalled", &stalled) == NATS_OK && stalled) {
      reply = stalled;
    }
    if (reply != nullptr && *reply != '\0') {
      natsConnection_Publish(client_->conn(), reply, nullptr, 0);
    }
    if (auto last = HeaderNumber(raw, "Nats-Last-Consumer"); last && *last > last_cseq_) {
      return Reset();  // it delivered messages that never came
    }
    return Status::Ok();
  }
  jsMsgMetaData* meta_raw = nullptr;
  if (natsMsg_GetMetaData(&meta_raw, raw) != NATS_OK) return Status::Ok();  // not a delivery
  std::unique_ptr<jsMsgMetaData, MetaDeleter> meta(meta_raw);
  const uint64_t cseq = meta->Sequence.Consumer;
  if (cseq <= last_cseq_) return Status::Ok();  // again, after a leader change
  if (cseq != last_cseq_ + 1) return Reset();   // a gap: start again after the last one seen
  last_cseq_ = cseq;
  resets_ = 0;
  const uint64_t seq = meta->Sequence.Stream;
  if (seq > spec_.end_seq) {
    done_ = true;
    return Status::Ok();
  }
  cursor_ = seq + 1;
  StoredMessage m;
  m.seq = seq;
  m.time_ns = meta->Timestamp;
  const char* subj = natsMsg_GetSubject(raw);
  m.subject = subj ? subj : "";
  m.headers = CopyHeaders(raw, spec_.headers_only);
  if (spec_.headers_only) {
    m.size = HeaderNumber(raw, JSMsgSize).value_or(0);
  } else {
    const char* d = natsMsg_GetData(raw);
    int n = natsMsg_GetDataLength(raw);
    if (d != nullptr && n > 0) m.data.assign(d, static_cast<size_t>(n));
    m.size = m.data.size();
  }
  ready_.push_back(std::move(m));
  if (seq == spec_.end_seq) {
    done_ = true;
  } else if (meta->NumPending == 0) {
    return ConsumerSaysDone();
  }
  return Status::Ok();
}

// A consumer counts what is pending in its own leader's replica of the stream, which may lag the
// stream's leader: with the leader paused right after 60 dead letters were stored, a new
// consumer said none were pending and `dlq list` answered 0 (the cluster test of a paused node,
// twice in three fresh-clone runs on 2026-12-07). The walk's end (end_seq) comes from the
// stream's leader; so does a message get.
Status StreamBrowser::ConsumerSaysDone() {
  if (cursor_ > spec_.end_seq) {
    done_ = true;
    return Status::Ok();
  }
  auto next = detail::GetNext(*client_, spec_.stream, cursor_, spec_.filter_subject);
  if (!next) return next.error();
  if (!*next || (*next)->seq > spec_.end_seq) {
    done_ = true;
    return Status::Ok();
  }
  spdlog::debug(
      "read {}: the consumer has nothing after {}, the stream's leader has {}: "
      "message gets from here",
      spec_.stream, cursor_ - 1, (*next)->seq);
  Stop();
  gets_ = true;
  return Status::Ok();
}

Status StreamBrowser::Fill() {
  if (cursor_ > spec_.end_seq) {
    done_ = true;
    return Status::Ok();
  }
  // Window [cursor, cursor + k): get i answers the first match at or after cursor + i, so the
  // distinct answers below cursor + k are exactly the matches in the window; the last get's
  // answer, when it lies beyond, is the first match after it.
  const uint64_t k = std::min<uint64_t>(window_, spec_.end_seq - cursor_ + 1);
  std::vector<std::string> bodies;
  for (uint64_t i = 0; i < k; ++i) bodies.push_back(GetBody(cursor_ + i, spec_.filter_subject));
  const std::string what = "read " + spec_.stream;
  auto answers = RequestAllRetrying(*client_, "$JS.API.STREAM.MSG.GET." + spec_.stream, bodies,
                                    Millis(client_->request_timeout_ms()), what);
  if (!answers) return answers.error();
  std::map<uint64_t, StoredMessage> found;
  size_t inside = 0;
  std::optional<uint64_t> last_answer;
  for (size_t i = 0; i < answers->size(); ++i) {
    auto m = ParseGet((*answers)[i], what, !spec_.headers_only);
    if (!m) return m.error();
    if (i + 1 == answers->size())
      last_answer = *m ? std::optional<uint64_t>((*m)->seq) : std::nullopt;
    if (!*m || (*m)->seq < cursor_ || (*m)->seq > spec_.end_seq) continue;
    uint64_t seq = (*m)->seq;
    if (seq < cursor_ + k) ++inside;
    if (seq < cursor_ + k || i + 1 == answers->size()) found.emplace(seq, std::move(**m));
  }
  for (auto& [seq, m] : found) ready_.push_back(std::move(m));
  if (!last_answer) {
    done_ = true;  // nothing matches at or after the window's last sequence
    cursor_ = spec_.end_seq + 1;
  } else {
    cursor_ = std::max(cursor_ + k, *last_answer + 1);
  }
  window_ = std::clamp<size_t>(inside * 2, 1, kMaxWindow);
  return Status::Ok();
}

Result<std::optional<StoredMessage>> StreamBrowser::Next() {
  while (ready_.empty() && !done_) {
    Status s = gets_ ? Fill() : Receive();
    if (!s) return s.error();
  }
  if (ready_.empty()) {
    Stop();  // the walk is over: its consumer goes now, not when the browser does
    return std::optional<StoredMessage>();
  }
  StoredMessage m = std::move(ready_.front());
  ready_.pop_front();
  return std::optional<StoredMessage>(std::move(m));
}

}  // namespace platformctl::nats_dlq
