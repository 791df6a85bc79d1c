#include "common/nats_client.h"

#include <nats/nats.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <random>
#include <vector>

#include "common/js_error.h"
#include "common/js_reach.h"
#include "common/log.h"
#include "common/nats_status.h"

namespace common {

Error NatsError(natsStatus s, const std::string& what, jsErrCode jerr) {
  std::string msg = what + ": " + natsStatus_GetText(s);
  if (jerr != 0) msg += " (JetStream error " + std::to_string(static_cast<int>(jerr)) + ")";
  const char* last = nats_GetLastError(nullptr);
  if (last != nullptr && *last != 0 && std::string(last) != natsStatus_GetText(s)) {
    msg += ": " + std::string(last);
  }
  Error e = Error::Permanent(std::move(msg));
  e.code = static_cast<int>(jerr);
  e.client_status = static_cast<int>(s);
  switch (s) {
    case NATS_NOT_FOUND:
      e.kind = ErrorKind::kNotFound;
      return e;
    case NATS_TIMEOUT:
    case NATS_NO_SERVER:
    case NATS_CONNECTION_CLOSED:
    case NATS_CONNECTION_DISCONNECTED:
    case NATS_STALE_CONNECTION:
    case NATS_NO_RESPONDERS:
    case NATS_IO_ERROR:
    case NATS_SLOW_CONSUMER:
      e.kind = ErrorKind::kRetryable;
      return e;
    case NATS_INVALID_ARG:
    case NATS_INVALID_SUBJECT:
      e.kind = ErrorKind::kInvalid;
      return e;
    default:
      break;
  }
  // JetStream answers "not found", "busy" (429) and "electing" as an API error code rather than
  // a status. nats.c hands over err_code only, not the answer's 429.
  if (jerr != 0) e.kind = js_error::KindOf(0, static_cast<int>(jerr));
  return e;
}

namespace {

struct OptionsDeleter {
  void operator()(natsOptions* o) const { natsOptions_Destroy(o); }
};

constexpr int64_t kReconnectWaitMs = 500;
constexpr int64_t kReconnectJitterMs = 100;
// A connection whose server stopped answering (a partition drops packets: no reset, no close)
// is given up after kMaxPingsOut pings without a pong, and the client moves to another server.
// nats.c's default (a ping every 2 minutes) left a cut-off instance "connected" for about 4
// minutes, its /healthz 200 (docs/operations.md, "Network partitions").
constexpr int64_t kPingIntervalMs = 5000;
constexpr int kMaxPingsOut = 2;

std::string UrlList(const CommonConfig& config) {
  std::string where;
  for (const auto& u : config.nats_urls) where += (where.empty() ? "" : ",") + u;
  return where;
}

std::string LastErrorText() {
  const char* last = nats_GetLastError(nullptr);
  // nats.c keeps no text for a refused or timed-out TCP connect.
  return last != nullptr && *last != 0 ? last
                                       : "no server accepted the connection and answered in time";
}

}  // namespace

// What nats.c's callbacks need, on their threads (the reconnect thread, the callback thread).
// Allocated per connection; the closed callback, which nats.c runs last, frees it.
struct NatsClient::Events {
  std::string name;  // client name, for the log lines
  std::string urls;
  std::mutex mu;
  LogLimiter failures{3, std::chrono::minutes(1)};  // guarded by mu
  int64_t attempts = 0;                             // guarded by mu
  std::shared_ptr<std::atomic<bool>> closing;       // set by NatsClient::Close(): stay quiet

  static void Reconnected(natsConnection* nc, void* closure) {
    auto* e = static_cast<Events*>(closure);
    char url[256] = {0};
    natsConnection_GetConnectedUrl(nc, url, sizeof(url));
    std::lock_guard lock(e->mu);
    spdlog::info("{}: reconnected to NATS at {} after {} failed rounds", e->name, url, e->attempts);
    e->attempts = 0;
    e->failures.Reset();
  }
  static void Disconnected(natsConnection*, void* closure) {
    auto* e = static_cast<Events*>(closure);
    if (!*e->closing) spdlog::warn("{}: disconnected from NATS; reconnecting", e->name);
  }
  static void Closed(natsConnection*, void* closure) { delete static_cast<Events*>(closure); }
  // Called by nats.c after each round over the server list that connected nowhere; returns the
  // wait before the next round. Runs on the reconnect thread, where nats.c left its last error.
  static int64_t FailedRound(natsConnection*, int, void* closure) {
    auto* e = static_cast<Events*>(closure);
    std::string why = LastErrorText();
    std::lock_guard lock(e->mu);
    ++e->attempts;
    int64_t suppressed = 0;
    if (!*e->closing && e->failures.Allow(std::chrono::steady_clock::now(), &suppressed)) {
      spdlog::warn("{}: cannot reconnect to NATS at {} (round {}{}): {}; retrying every {} ms",
                   e->name, e->urls, e->attempts,
                   suppressed > 0 ? ", " + std::to_string(suppressed) + " not logged" : "", why,
                   kReconnectWaitMs);
    }
    // Jitter, so that many clients that lost one server do not come back in step.
    return kReconnectWaitMs +
           std::chrono::steady_clock::now().time_since_epoch().count() % kReconnectJitterMs;
  }
};

Result<std::unique_ptr<NatsClient>> NatsClient::Connect(const CommonConfig& config,
                                                        const Options& options) {
  natsOptions* raw = nullptr;
  if (auto s = natsOptions_Create(&raw); s != NATS_OK) return NatsError(s, "nats options");
  std::unique_ptr<natsOptions, OptionsDeleter> opts(raw);

  // Moving away from a server (avoid_url): our order, kept by nats.c for its reconnects too.
  const std::vector<std::string> servers =
      options.avoid_url.empty()
          ? config.nats_urls
          : ServersAvoiding(config.nats_urls, options.avoid_url, std::random_device{}());
  std::vector<const char*> urls;
  for (const auto& u : servers) urls.push_back(u.c_str());
  natsStatus s = natsOptions_SetServers(opts.get(), urls.data(), static_cast<int>(urls.size()));
  if (s == NATS_OK && !options.avoid_url.empty()) s = natsOptions_SetNoRandomize(opts.get(), true);
  if (s == NATS_OK && !options.client_name.empty()) {
    s = natsOptions_SetName(opts.get(), options.client_name.c_str());
  }
  if (s == NATS_OK && !config.nats_user.empty()) {
    s = natsOptions_SetUserInfo(opts.get(), config.nats_user.c_str(), config.nats_password.c_str());
  }
  if (s == NATS_OK && !config.nats_creds.empty()) {
    s = natsOptions_SetUserCredentialsFromFiles(opts.get(), config.nats_creds.c_str(), nullptr);
  }
  if (s == NATS_OK && !config.nats_inbox_prefix.empty()) {
    s = natsOptions_SetCustomInboxPrefix(opts.get(), config.nats_inbox_prefix.c_str());
  }
  if (s != NATS_OK) return NatsError(s, "nats options");
  // nats.c takes tls:// for a hint only: without this a tls:// server that offers no TLS would
  // be used in plain text.
  if (config.nats_tls) {
    if (s = natsOptions_SetSecure(opts.get(), true); s != NATS_OK) {
      return NatsError(s, "NATS TLS (is libnats built with TLS?)");
    }
  }
  if (!config.nats_ca.empty()) {
    if (s = natsOptions_LoadCATrustedCertificates(opts.get(), config.nats_ca.c_str());
        s != NATS_OK) {
      return Error::Invalid("NATS_CA: cannot load " + config.nats_ca + ": " + LastErrorText());
    }
  }
  if (!config.nats_cert.empty()) {
    if (s = natsOptions_LoadCertificatesChain(opts.get(), config.nats_cert.c_str(),
                                              config.nats_key.c_str());
        s != NATS_OK) {
      return Error::Invalid("NATS_CERT/NATS_KEY: cannot load " + config.nats_cert + " and " +
                            config.nats_key + ": " + LastErrorText());
    }
  }
  // Reconnect for ever: a core service outlives any NATS node restart.
  s = natsOptions_SetMaxReconnect(opts.get(), -1);
  if (s == NATS_OK) s = natsOptions_SetReconnectWait(opts.get(), kReconnectWaitMs);
  if (s == NATS_OK) s = natsOptions_SetTimeout(opts.get(), config.nats_connect_timeout.count());
  if (s == NATS_OK) s = natsOptions_SetSendAsap(opts.get(), options.send_asap);
  if (s == NATS_OK) s = natsOptions_SetPingInterval(opts.get(), kPingIntervalMs);
  if (s == NATS_OK) s = natsOptions_SetMaxPingsOut(opts.get(), kMaxPingsOut);

  auto* events = new Events();
  events->name = options.client_name.empty() ? "nats" : options.client_name;
  events->urls = UrlList(config);
  auto closing = std::make_shared<std::atomic<bool>>(false);
  events->closing = closing;
  const std::string name = events->name;
  if (s == NATS_OK) s = natsOptions_SetClosedCB(opts.get(), &Events::Closed, events);
  if (s == NATS_OK) s = natsOptions_SetDisconnectedCB(opts.get(), &Events::Disconnected, events);
  if (s == NATS_OK) s = natsOptions_SetReconnectedCB(opts.get(), &Events::Reconnected, events);
  if (s == NATS_OK) {
    s = natsOptions_SetCustomReconnectDelay(opts.get(), &Events::FailedRound, events);
  }
  if (s != NATS_OK) {
    delete events;
    return NatsError(s, "nats options");
  }

  std::unique_ptr<NatsClient> client(new NatsClient());
  client->timeout_ms_ = options.request_timeout_ms;
  client->config_ = config;
  client->avoid_url_ = options.avoid_url;
  client->closing_ = closing;
  client->Join();
  // The first connection is made here, attempt after attempt, rather than by nats.c's "retry on
  // failed connect": that one gives up for good when the first attempt fails after TCP (a TLS
  // or authentication error leaves it without a current server, nats.c 3.4), and it hands out a
  // connection nothing can use yet. Once connected, nats.c reconnects by itself, for ever.
  const std::string where = "connect to NATS at " + UrlList(config);
  LogLimiter failures(3, std::chrono::minutes(1));
  int64_t attempts = 0;
  while ((s = natsConnection_Connect(&client->conn_, opts.get())) != NATS_OK) {
    client->conn_ = nullptr;
    Error e = NatsError(s, where);
    if (options.retry_until_stopped == nullptr) {
      delete events;  // no connection: no closed callback either
      return e;
    }
    ++attempts;
    int64_t suppressed = 0;
    if (failures.Allow(std::chrono::steady_clock::now(), &suppressed)) {
      spdlog::warn("{}: cannot connect to NATS at {} (attempt {}{}): {}; retrying every {} ms",
                   name, UrlList(config), attempts,
                   suppressed > 0 ? ", " + std::to_string(suppressed) + " not logged" : "",
                   e.message.substr(where.size() + 2), kReconnectWaitMs);
    }
    if (options.retry_until_stopped->WaitFor(std::chrono::milliseconds(kReconnectWaitMs))) {
      delete events;
      return Error::Retryable(where + ": stopped before a server answered (" +
                              std::to_string(attempts) + " attempts)");
    }
  }
  // From here `events` belongs to the connection, whose closed callback frees it.
  if (attempts > 0) {
    spdlog::info("{}: connected to NATS at {} after {} failed attempts", name,
                 client->ConnectedUrl(), attempts);
  }
  jsOptions jo;
  jsOptions_Init(&jo);
  jo.Wait = options.request_timeout_ms;
  if (s = natsConnection_JetStream(&client->js_, client->conn_, &jo); s != NATS_OK) {
    return NatsError(s, "JetStream context");
  }
  return client;
}

Result<std::string> NatsClient::NewInbox() const {
  natsInbox* raw = nullptr;
  if (natsStatus s = natsInbox_Create(&raw); s != NATS_OK) return NatsError(s, "new inbox");
  std::string inbox(raw);  // "_INBOX.<unique id>"
  natsInbox_Destroy(raw);
  if (config_.nats_inbox_prefix.empty()) return inbox;
  return config_.nats_inbox_prefix + inbox.substr(inbox.find('.'));
}

// The connections of one Connect() and of its siblings.
struct NatsClient::Group {
  std::mutex mu;
  std::vector<NatsClient*> members;  // guarded by mu
};

Result<std::unique_ptr<NatsClient>> NatsClient::Sibling(const Options& options) const {
  Options o = options;
  if (o.avoid_url.empty()) o.avoid_url = avoid_url_;  // not back to the server this one left
  auto sibling = Connect(config_, o);
  if (!sibling) return sibling;
  std::lock_guard lock(group_->mu);
  (*sibling)->Leave();
  (*sibling)->group_ = group_;
  group_->members.push_back(sibling->get());
  return sibling;
}

void NatsClient::Join() {
  group_ = std::make_shared<Group>();
  group_->members.push_back(this);
}

void NatsClient::Leave() {
  if (!group_) return;
  auto& m = group_->members;
  m.erase(std::remove(m.begin(), m.end(), this), m.end());
}

NatsClient::~NatsClient() {
  if (group_) {
    std::lock_guard lock(group_->mu);
    Leave();
  }
  if (js_ != nullptr) jsCtx_Destroy(js_);
  if (conn_ != nullptr) {
    CloseOwn();
    natsConnection_Destroy(conn_);
  }
}

void NatsClient::CloseOwn() {
  if (conn_ == nullptr) return;
  if (closing_) *closing_ = true;
  natsConnection_Close(conn_);
}

void NatsClient::Close() {
  if (!group_) return CloseOwn();
  std::lock_guard lock(group_->mu);
  for (NatsClient* c : group_->members) c->CloseOwn();
}

bool NatsClient::Connected() const {
  return conn_ != nullptr && natsConnection_Status(conn_) == NATS_CONN_STATUS_CONNECTED;
}

Status NatsClient::Flush(int64_t timeout_ms) {
  natsStatus s = natsConnection_FlushTimeout(conn_, timeout_ms);
  return s == NATS_OK ? Status::Ok() : Status(NatsError(s, "flush"));
}

void DestroySubscription(NatsClient& client, natsSubscription* sub, bool quiesce, int64_t wait_ms) {
  if (sub == nullptr) return;
  natsSubscription_Unsubscribe(sub);
  // A failed flush (no connection) is no reason to keep the subscription: without a connection
  // the read loop delivers nothing, and the window the flush closes is a few instructions wide.
  if (quiesce) (void)natsConnection_FlushTimeout(client.conn(), wait_ms);
  natsSubscription_Destroy(sub);
}

std::string NatsClient::ConnectedUrl() const {
  char buf[256] = {0};
  if (conn_ == nullptr || natsConnection_GetConnectedUrl(conn_, buf, sizeof(buf)) != NATS_OK) {
    return "";
  }
  return buf;
}

NatsStopGuard::NatsStopGuard(NatsClient& nats, const StopFlag& stop) {
  thread_ = std::thread([this, &nats, &stop] {
    while (!done_.WaitFor(std::chrono::milliseconds(50))) {
      if (!stop.stopping()) continue;
      if (!nats.Connected()) {
        spdlog::info("stopping while NATS is not connected: closing the connection");
        nats.Close();
        return;
      }
      // "Connected" can be a server that stopped answering (paused, cut off) until nats.c's
      // pings notice, minutes later: one must answer a ping now.
      if (auto st = nats.Flush(kStopProbeMs); !st && !done_.stopping()) {
        spdlog::warn(
            "stopping, and NATS did not answer a ping within {} ms ({}): closing the "
            "connection",
            kStopProbeMs, st.error().message);
        nats.Close();
        return;
      }
    }
  });
}

NatsStopGuard::~NatsStopGuard() {
  done_.Request();
  thread_.join();
}

NatsLibraryGuard::~NatsLibraryGuard() { nats_CloseAndWait(2000); }

}  // namespace common
