#include "platformctl/raft_watch.h"

#include <nats/nats.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>

#include <nlohmann/json.hpp>

#include "common/nats_msg_ptr.h"
#include "common/nats_status.h"
#include "platformctl/nats_admin.h"

namespace platformctl::nats_admin {
namespace {

using Clock = std::chrono::steady_clock;

// Servers may still answer after we stopped listening: the subscription goes after a quiesce.
class PingSubscription {
 public:
  explicit PingSubscription(NatsClient& client) : client_(client) {}
  ~PingSubscription() { DestroySubscription(client_, sub_, /*quiesce=*/true); }
  PingSubscription(const PingSubscription&) = delete;
  PingSubscription& operator=(const PingSubscription&) = delete;
  natsSubscription** out() { return &sub_; }
  natsSubscription* get() const { return sub_; }

 private:
  NatsClient& client_;
  natsSubscription* sub_ = nullptr;
};

// A request every server answers: the answers' bodies until `enough` says so or the client's
// request timeout passed. "No responders" (a status without body) is no answer.
Result<std::vector<std::string>> Ping(NatsClient& client, const std::string& subject,
                                      const std::string& body,
                                      const std::function<bool(const std::string&)>& enough) {
  auto inbox = client.NewInbox();
  if (!inbox) return inbox.error();
  PingSubscription sub(client);
  natsStatus s = natsConnection_SubscribeSync(sub.out(), client.conn(), inbox->c_str());
  if (s != NATS_OK) return NatsError(s, subject + ": reply subscription");
  s = natsConnection_PublishRequest(client.conn(), subject.c_str(), inbox->c_str(), body.data(),
                                    static_cast<int>(body.size()));
  if (s != NATS_OK) return NatsError(s, subject);
  std::vector<std::string> out;
  const auto deadline = Clock::now() + Millis(client.request_timeout_ms());
  while (true) {
    auto left = std::chrono::duration_cast<Millis>(deadline - Clock::now());
    if (left.count() <= 0) break;
    natsMsg* m = nullptr;
    s = natsSubscription_NextMsg(&m, sub.get(), left.count());
    if (s != NATS_OK) break;
    common::NatsMsgPtr reply(m);
    const char* d = natsMsg_GetData(m);
    int n = natsMsg_GetDataLength(m);
    if (d == nullptr || n == 0) continue;
    out.emplace_back(d, static_cast<size_t>(n));
    if (enough(out.back())) break;
  }
  return out;
}

Error NoAnswer(NatsClient& client, const std::string& subject) {
  std::string last = LastServerError(client);
  return Error::Retryable(
      subject + ": no server answered (nats-server before 2.10 has no raftz, and the NATS user " +
      "must be allowed it: the system account exports it to platformctl's and the " +
      "provisioner's accounts)" + (last.empty() ? "" : "; the server said: " + last));
}

}  // namespace

Result<RaftGroup> FindRaftGroup(NatsClient& client, const std::string& stream) {
  Patience patience;
  auto info =
      ApiRequest(client, "$JS.API.STREAM.INFO." + stream, "", "stream info " + stream, patience);
  if (!info) return info.error();
  auto rs = ParseReplicas(*info);
  if (!rs) return rs.error();
  RaftGroup g;
  g.stream = stream;
  g.group = raft::GroupOfStreamInfo(*info);
  for (const auto& p : rs->peers) g.replicas.push_back(p.name);
  if (g.group.empty()) {
    return Error::Permanent("stream info " + stream +
                            " names no raft group (nats-server 2.9 does not): its raft logs "
                            "cannot be read");
  }
  nlohmann::json body = {{"accounts", true}, {"streams", true}};
  auto answers = Ping(client, kJszSubject, body.dump(), [&](const std::string& a) {
    return !raft::AccountOfGroup(a, g.group).empty();
  });
  if (!answers) return answers.error();
  for (const auto& a : *answers) {
    g.account = raft::AccountOfGroup(a, g.group);
    if (!g.account.empty()) return g;
  }
  if (answers->empty()) return NoAnswer(client, kJszSubject);
  return Error::Permanent(std::string(kJszSubject) + ": no server lists the raft group " + g.group +
                          " of " + stream);
}

Result<std::vector<raft::LogState>> ReadRaftLogs(NatsClient& client, const RaftGroup& g) {
  nlohmann::json body = {{"account", g.account}, {"group", g.group}};
  std::vector<raft::LogState> states;
  std::vector<std::string> errors;
  size_t answered = 0;
  auto answers = Ping(client, kRaftzSubject, body.dump(), [&](const std::string& a) {
    ++answered;
    auto s = raft::ParseRaftz(a, g.account, g.group);
    if (!s) {
      errors.push_back(s.error().message);
    } else if (*s) {
      states.push_back(**s);
    }
    return std::all_of(g.replicas.begin(), g.replicas.end(), [&](const std::string& name) {
      return std::any_of(states.begin(), states.end(),
                         [&](const raft::LogState& st) { return st.server == name; });
    });
  });
  if (!answers) return answers.error();
  if (answered == 0) return NoAnswer(client, kRaftzSubject);
  if (states.empty() && !errors.empty()) return Error::Permanent(errors.front());
  return states;
}

}  // namespace platformctl::nats_admin
