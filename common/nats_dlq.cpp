#include "common/nats_dlq.h"

#include <nats/nats.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <thread>
#include <utility>

#include <nlohmann/json.hpp>

#include "common/nats_admin.h"
#include "common/nats_status.h"

namespace core::nats_dlq {
namespace {

using nats_admin::Patience;

struct MsgDeleter {
  void operator()(natsMsg* m) const { natsMsg_Destroy(m); }
};
struct SubDeleter {
  void operator()(natsSubscription* s) const {
    natsSubscription_Unsubscribe(s);
    natsSubscription_Destroy(s);
  }
};

// Gets in flight at once at most (a window doubles up to it while it keeps finding messages).
constexpr size_t kMaxWindow = 256;

// Requests to one subject sent together on one reply subscription; answer i (its body) when
// one came within `timeout`. "No responders" (a status without body) counts as no answer.
struct Answers {
  std::vector<std::optional<std::string>> bodies;
  std::optional<Error> error;  // the requests could not be sent at all
};

Answers RequestAll(NatsClient& client, const std::string& subject,
                   const std::vector<std::string>& bodies, Millis timeout) {
  Answers out;
  out.bodies.assign(bodies.size(), std::nullopt);
  auto inbox = client.NewInbox();
  if (!inbox) {
    out.error = inbox.error();
    return out;
  }
  natsSubscription* raw = nullptr;
  natsStatus s = natsConnection_SubscribeSync(&raw, client.conn(), (*inbox + ".*").c_str());
  std::unique_ptr<natsSubscription, SubDeleter> sub(raw);
  if (s != NATS_OK) {
    out.error = NatsError(s, subject + ": reply subscription");
    return out;
  }
  size_t expected = 0;
  for (size_t i = 0; i < bodies.size(); ++i) {
    s = natsConnection_PublishRequest(client.conn(), subject.c_str(),
                                      (*inbox + "." + std::to_string(i)).c_str(), bodies[i].data(),
                                      static_cast<int>(bodies[i].size()));
    if (s != NATS_OK) {
      out.error = NatsError(s, subject);
      return out;
    }
    ++expected;
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (expected > 0) {
    auto left = std::chrono::duration_cast<Millis>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    natsMsg* m = nullptr;
    s = natsSubscription_NextMsg(&m, sub.get(), left.count());
    if (s != NATS_OK) break;
    std::unique_ptr<natsMsg, MsgDeleter> reply(m);
    std::string_view subj = natsMsg_GetSubject(m);
    size_t i = 0;
    auto tail = subj.substr(subj.rfind('.') + 1);
    if (std::from_chars(tail.data(), tail.data() + tail.size(), i).ec != std::errc() ||
        i >= bodies.size() || out.bodies[i]) {
      continue;  // not ours, or a second answer (every server answers "not available")
    }
    const char* d = natsMsg_GetData(m);
    int n = natsMsg_GetDataLength(m);
    if (n == 0) continue;  // "no responders": JetStream is not there (yet)
    out.bodies[i] = std::string(d, static_cast<size_t>(n));
    --expected;
  }
  return out;
}

// RequestAll, with the requests that got no answer or a retryable error answer sent again
// within `patience`. Answer i: its body (which may be an error answer that is not retryable).
Result<std::vector<std::string>> RequestAllRetrying(NatsClient& client, const std::string& subject,
                                                    const std::vector<std::string>& bodies,
                                                    Millis timeout, const std::string& what,
                                                    std::vector<int>* tries = nullptr) {
  std::vector<std::optional<std::string>> got(bodies.size());
  if (tries != nullptr) tries->assign(bodies.size(), 0);
  Patience patience;
  std::string last_why = "no answer within " + std::to_string(timeout.count()) + " ms";
  while (true) {
    std::vector<size_t> todo;
    std::vector<std::string> send;
    for (size_t i = 0; i < bodies.size(); ++i) {
      if (!got[i]) {
        todo.push_back(i);
        send.push_back(bodies[i]);
      }
    }
    if (todo.empty()) break;
    Answers a = RequestAll(client, subject, send, timeout);
    if (a.error && a.error->kind != ErrorKind::kRetryable) return *a.error;
    bool progress = false;
    for (size_t k = 0; k < todo.size(); ++k) {
      if (tries != nullptr) ++(*tries)[todo[k]];
      if (!a.bodies[k]) continue;
      auto api = nats_admin::ApiError(*a.bodies[k], what);
      if (api && api->kind == ErrorKind::kRetryable) {
        last_why = api->message;
        continue;
      }
      got[todo[k]] = std::move(a.bodies[k]);
      progress = true;
    }
    if (a.error) last_why = a.error->message;
    if (progress) patience.Progress();
    if (std::all_of(got.begin(), got.end(), [](const auto& g) { return g.has_value(); })) break;
    auto delay = patience.NextDelay();
    if (!delay) {
      std::string server = nats_admin::LastServerError(client);
      return Error::Retryable(what + ": gave up after " +
                              std::to_string(patience.waited().count() / 1000) + " s (" + last_why +
                              ")" + (server.empty() ? "" : "; the server said: " + server));
    }
    std::this_thread::sleep_for(*delay);
  }
  std::vector<std::string> out;
  out.reserve(got.size());
  for (auto& g : got) out.push_back(std::move(*g));
  return out;
}

std::string GetBody(uint64_t seq, const std::string& next_by_subject) {
  nlohmann::json j = {{"seq", seq}};
  if (!next_by_subject.empty()) j["next_by_subj"] = next_by_subject;
  return j.dump();
}

// A stored message from a message get's answer; nullopt (with found = false) for "no message".
Result<std::optional<StoredMessage>> ParseGet(const std::string& answer, const std::string& what,
                                              bool keep_data) {
  if (auto e = nats_admin::ApiError(answer, what)) {
    if (e->kind == ErrorKind::kNotFound) return std::optional<StoredMessage>();
    return *e;
  }
  auto j = nlohmann::json::parse(answer, nullptr, false);
  if (!j.is_object() || !j.contains("message") || !j["message"].is_object()) {
    return Error::Permanent(what + ": an answer that is not JetStream's");
  }
  const auto& m = j["message"];
  StoredMessage out;
  out.seq = m.value("seq", uint64_t{0});
  out.subject = m.value("subject", std::string());
  auto t = nats_admin::ParseJsTime(m.value("time", std::string()));
  out.time_ns = t ? *t : 0;
  if (auto h = m.find("hdrs"); h != m.end() && h->is_string()) {
    auto block = DecodeBase64(h->get_ref<const std::string&>());
    if (!block) return Error::Permanent(what + ": headers that are not base64");
    out.headers = ParseHeaderBlock(*block);
  }
  if (auto d = m.find("data"); d != m.end() && d->is_string()) {
    const std::string& b64 = d->get_ref<const std::string&>();
    if (keep_data) {
      auto data = DecodeBase64(b64);
      if (!data) return Error::Permanent(what + ": a payload that is not base64");
      out.data = std::move(*data);
      out.size = out.data.size();
    } else {
      size_t pad = b64.size() >= 2 && b64[b64.size() - 2] == '=' ? 2
                   : !b64.empty() && b64.back() == '='           ? 1
                                                                 : 0;
      out.size = b64.size() / 4 * 3 - pad;
    }
  }
  if (out.seq == 0) return Error::Permanent(what + ": a message without a sequence");
  return std::optional<StoredMessage>(std::move(out));
}

// The first message matching `filter` at or after `seq`, from the leader.
Result<std::optional<StoredMessage>> GetNext(NatsClient& client, const std::string& stream,
                                             uint64_t seq, const std::string& filter) {
  const std::string what = "read " + stream;
  auto answers =
      RequestAllRetrying(client, "$JS.API.STREAM.MSG.GET." + stream, {GetBody(seq, filter)},
                         Millis(client.request_timeout_ms()), what);
  if (!answers) return answers.error();
  return ParseGet((*answers)[0], what, false);
}

// The sequence to start a walk from `time_ns` at: a binary search over message gets on the
// stream's timestamps, which grow with the sequence. (nats-server 2.9's own start-by-time
// consumer now and then delivered nothing for a time that fell between two stored messages.)
// The answer never lies past the first matching message at or after the time; callers filter
// by time as well, so starting early only costs reading.
Result<uint64_t> FirstSeqAtOrAfter(NatsClient& client, const BrowseSpec& spec, uint64_t lo,
                                   uint64_t last) {
  uint64_t hi = last + 1;  // lo: every matching message before it was stored before the time
  while (lo < hi) {
    uint64_t mid = lo + (hi - lo) / 2;
    auto found = GetNext(client, spec.stream, mid, spec.filter_subject);
    if (!found) return found.error();
    if (*found && (*found)->seq < hi && (*found)->time_ns < spec.start_time_ns) {
      lo = (*found)->seq + 1;
    } else {
      hi = mid;  // at or after the time, or nothing matches from mid on: look before
    }
  }
  return lo;
}

}  // namespace

Headers ParseHeaderBlock(std::string_view block) {
  Headers out;
  size_t pos = block.find("\r\n");  // past the "NATS/1.0" status line
  if (pos == std::string_view::npos) return out;
  pos += 2;
  while (pos < block.size()) {
    size_t end = block.find("\r\n", pos);
    if (end == std::string_view::npos) end = block.size();
    std::string_view line = block.substr(pos, end - pos);
    pos = end + 2;
    if (line.empty()) break;
    size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) continue;
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
      value.remove_prefix(1);
    out.emplace_back(std::string(line.substr(0, colon)), std::string(value));
  }
  return out;
}

std::optional<std::string> DecodeBase64(std::string_view in) {
  auto val = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  while (!in.empty() && in.back() == '=') in.remove_suffix(1);
  if (in.size() % 4 == 1) return std::nullopt;
  std::string out;
  out.reserve(in.size() / 4 * 3 + 2);
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    int v = val(c);
    if (v < 0) return std::nullopt;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  return out;
}

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
    if (b->cursor_ > spec.end_seq) b->done_ = true;
  }
  return b;
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
    if (auto s = Fill(); !s) return s.error();
  }
  if (ready_.empty()) return std::optional<StoredMessage>();
  StoredMessage m = std::move(ready_.front());
  ready_.pop_front();
  return std::optional<StoredMessage>(std::move(m));
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
  for (size_t i = 0; i < seqs.size(); ++i) {
    const std::string one = what + " #" + std::to_string(seqs[i]);
    if (!answers) {
      out.push_back(answers.error());
      continue;
    }
    const std::string& a = (*answers)[i];
    if (auto e = nats_admin::ApiError(a, one)) {
      // Gone on a second try: the first one, whose answer was lost, erased it.
      if (e->kind == ErrorKind::kNotFound && tries[i] > 1) {
        out.push_back(Status::Ok());
      } else {
        out.push_back(*e);
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
  return out;
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

}  // namespace core::nats_dlq
