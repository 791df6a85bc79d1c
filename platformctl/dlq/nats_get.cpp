#include "platformctl/dlq/nats_get.h"

#include <nats/nats.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <memory>
#include <thread>
#include <utility>

#include <nlohmann/json.hpp>

#include "common/base64.h"
#include "common/nats_msg_ptr.h"
#include "common/nats_status.h"
#include "platformctl/json_whole.h"
#include "platformctl/nats_admin.h"

namespace platformctl::nats_dlq {
namespace detail {
namespace {

using nats_admin::Patience;

// Every server may answer a request (those without the message say "not available"), so a
// reply can be on its way when we are done: the subscription goes only after a quiesce.
class ReplySubscription {
 public:
  explicit ReplySubscription(NatsClient& client) : client_(client) {}
  ~ReplySubscription() { DestroySubscription(client_, sub_, /*quiesce=*/true); }
  ReplySubscription(const ReplySubscription&) = delete;
  ReplySubscription& operator=(const ReplySubscription&) = delete;
  natsSubscription** out() { return &sub_; }
  natsSubscription* get() const { return sub_; }

 private:
  NatsClient& client_;
  natsSubscription* sub_ = nullptr;
};

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
  ReplySubscription sub(client);
  natsStatus s = natsConnection_SubscribeSync(sub.out(), client.conn(), (*inbox + ".*").c_str());
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
    common::NatsMsgPtr reply(m);
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

}  // namespace

bool NothingToDeliver(const std::string& create_answer) {
  auto info = nlohmann::json::parse(create_answer, nullptr, false);
  // Read by type: a float or a string there is no count (json_whole.h); unknown is not "none".
  if (json_whole::WholeAt<uint64_t>(info, "num_pending") != uint64_t{0}) return false;
  auto delivered = info.is_object() ? info.find("delivered") : info.end();
  if (!info.is_object() || delivered == info.end()) return false;
  return json_whole::WholeAt<uint64_t>(*delivered, "consumer_seq") == uint64_t{0};
}

// RequestAll, with the requests that got no answer or a retryable error answer sent again
// within `patience`. Answer i: its body (which may be an error answer that is not retryable).
Result<std::vector<std::string>> RequestAllRetrying(NatsClient& client, const std::string& subject,
                                                    const std::vector<std::string>& bodies,
                                                    Millis timeout, const std::string& what,
                                                    std::vector<int>* tries) {
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
  // Read by type (json::value() throws on another type, and its get<uint64_t> of a float is
  // undefined behaviour; json_whole.h): an answer is input we do not control. A sequence that
  // is no whole number is none (refused below).
  out.seq = json_whole::WholeAt<uint64_t>(m, "seq").value_or(0);
  auto text = [&](const char* key) {
    auto it = m.find(key);
    return it != m.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  out.subject = text("subject");
  auto t = nats_admin::ParseJsTime(text("time"));
  out.time_ns = t ? *t : 0;
  if (auto h = m.find("hdrs"); h != m.end() && h->is_string()) {
    auto block = common::DecodeBase64(h->get_ref<const std::string&>());
    if (!block) return Error::Permanent(what + ": headers that are not base64");
    out.headers = ParseHeaderBlock(*block);
  }
  if (auto d = m.find("data"); d != m.end() && d->is_string()) {
    const std::string& b64 = d->get_ref<const std::string&>();
    if (keep_data) {
      auto data = common::DecodeBase64(b64);
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

}  // namespace detail

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

}  // namespace platformctl::nats_dlq
