#include "common/nats_client.h"

#include <nats/nats.h>

#include <vector>

#include "common/nats_status.h"

namespace core {

Error NatsError(natsStatus s, const std::string& what, jsErrCode jerr) {
  std::string msg = what + ": " + natsStatus_GetText(s);
  if (jerr != 0) msg += " (JetStream error " + std::to_string(static_cast<int>(jerr)) + ")";
  const char* last = nats_GetLastError(nullptr);
  if (last != nullptr && *last != 0 && std::string(last) != natsStatus_GetText(s)) {
    msg += ": " + std::string(last);
  }
  switch (s) {
    case NATS_NOT_FOUND:
      return Error::NotFound(msg);
    case NATS_TIMEOUT:
    case NATS_NO_SERVER:
    case NATS_CONNECTION_CLOSED:
    case NATS_CONNECTION_DISCONNECTED:
    case NATS_STALE_CONNECTION:
    case NATS_NO_RESPONDERS:
    case NATS_IO_ERROR:
    case NATS_SLOW_CONSUMER:
      return Error::Retryable(msg);
    case NATS_INVALID_ARG:
    case NATS_INVALID_SUBJECT:
      return Error::Invalid(msg);
    default:
      break;
  }
  // JetStream answers "not found" as an API error code rather than a status.
  if (jerr == JSStreamNotFoundErr || jerr == JSConsumerNotFoundErr || jerr == JSNoMessageFoundErr) {
    return Error::NotFound(msg);
  }
  return Error::Permanent(msg);
}

namespace {

struct OptionsDeleter {
  void operator()(natsOptions* o) const { natsOptions_Destroy(o); }
};

}  // namespace

Result<std::unique_ptr<NatsClient>> NatsClient::Connect(const CommonConfig& config,
                                                        const Options& options) {
  natsOptions* raw = nullptr;
  if (auto s = natsOptions_Create(&raw); s != NATS_OK) return NatsError(s, "nats options");
  std::unique_ptr<natsOptions, OptionsDeleter> opts(raw);

  std::vector<const char*> urls;
  for (const auto& u : config.nats_urls) urls.push_back(u.c_str());
  natsStatus s = natsOptions_SetServers(opts.get(), urls.data(), static_cast<int>(urls.size()));
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
  // Reconnect for ever: a core service outlives any NATS node restart.
  if (s == NATS_OK) s = natsOptions_SetMaxReconnect(opts.get(), -1);
  if (s == NATS_OK) s = natsOptions_SetReconnectWait(opts.get(), 500);
  if (s == NATS_OK) s = natsOptions_SetTimeout(opts.get(), 3000);
  if (s == NATS_OK) s = natsOptions_SetSendAsap(opts.get(), options.send_asap);
  if (s == NATS_OK && options.retry_first_connect) {
    s = natsOptions_SetRetryOnFailedConnect(opts.get(), true, nullptr, nullptr);
  }
  if (s != NATS_OK) return NatsError(s, "nats options");

  std::unique_ptr<NatsClient> client(new NatsClient());
  client->timeout_ms_ = options.request_timeout_ms;
  client->config_ = config;
  s = natsConnection_Connect(&client->conn_, opts.get());
  // With retry on, NATS_NOT_YET_CONNECTED means "connecting in the background": fine.
  if (s != NATS_OK && !(options.retry_first_connect && s == NATS_NOT_YET_CONNECTED)) {
    std::string where;
    for (const auto& u : config.nats_urls) where += (where.empty() ? "" : ",") + u;
    return NatsError(s, "connect to NATS at " + where);
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

Result<std::unique_ptr<NatsClient>> NatsClient::Sibling(const Options& options) const {
  return Connect(config_, options);
}

NatsClient::~NatsClient() {
  if (js_ != nullptr) jsCtx_Destroy(js_);
  if (conn_ != nullptr) {
    natsConnection_Close(conn_);
    natsConnection_Destroy(conn_);
  }
}

bool NatsClient::Connected() const {
  return conn_ != nullptr && natsConnection_Status(conn_) == NATS_CONN_STATUS_CONNECTED;
}

Status NatsClient::Flush(int64_t timeout_ms) {
  natsStatus s = natsConnection_FlushTimeout(conn_, timeout_ms);
  return s == NATS_OK ? Status::Ok() : Status(NatsError(s, "flush"));
}

std::string NatsClient::ConnectedUrl() const {
  char buf[256] = {0};
  if (conn_ == nullptr || natsConnection_GetConnectedUrl(conn_, buf, sizeof(buf)) != NATS_OK) {
    return "";
  }
  return buf;
}

NatsLibraryGuard::~NatsLibraryGuard() { nats_CloseAndWait(2000); }

}  // namespace core
