// nats_probe: one NATS operation as a given user, reporting whether the server allowed it.
//
// The deployment test proves the permission matrix of the rendered nats-server configuration:
// the real binaries show each user can do its job, this probe shows each is refused the rest.
// It is a test-only adapter over nats.c (the product's adapters live in common/nats_*.cpp and
// deliberately offer no raw request API). It reads NATS_URL, NATS_USER, NATS_PASSWORD and
// NATS_INBOX_PREFIX like the services, and for TLS NATS_CA (the CA file the servers' certificates
// are checked against) and NATS_CERT plus NATS_KEY (a client certificate, for mutual TLS).
//
//   nats_probe req SUBJECT [BODY]          request/reply (JetStream API calls)
//   nats_probe pub SUBJECT BODY [K=V]...   JetStream publish with headers, waits for the ack
//   nats_probe sub SUBJECT                 subscribe, then wait for a refusal
//   nats_probe kvget BUCKET KEY            read a key as the services do (nats.c KV API)
//   nats_probe reqs SUBJECT...              several requests with empty bodies, one connection
//   nats_probe reply SUBJECT BODY REPLY... one plain publish per REPLY, each naming it as the
//                                          reply subject (where JetStream sends its ack or answer)
//
// Exit codes: 0 allowed (the reply is printed), 10 refused by a permissions violation (the
// server's text is printed), 1 anything else (timeout without a refusal, connection failure).
// Single-threaded except for nats.c's error callback, which only records the refusal text.
#include <nats/nats.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/config.h"
#include "common/nats_msg_ptr.h"

namespace {

constexpr int kAllowed = 0;
constexpr int kRefused = 10;
constexpr int kFailed = 1;
constexpr int64_t kTimeoutMs = 3000;

// What the server's asynchronous errors said (permission violations arrive this way).
struct Refusals {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> texts;

  bool WaitFor(int64_t ms) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, std::chrono::milliseconds(ms), [&] { return !texts.empty(); });
  }
  std::string First() {
    std::lock_guard lock(mu);
    return texts.empty() ? "" : texts.front();
  }
};

void OnError(natsConnection* nc, natsSubscription*, natsStatus err, void* closure) {
  auto* r = static_cast<Refusals*>(closure);
  const char* text = nullptr;
  natsConnection_GetLastError(nc, &text);
  std::string t = text ? text : natsStatus_GetText(err);
  if (err != NATS_NOT_PERMITTED && t.find("Permissions Violation") == std::string::npos) return;
  std::lock_guard lock(r->mu);
  r->texts.push_back(t);
  r->cv.notify_all();
}

struct ConnDeleter {
  void operator()(natsConnection* c) const {
    natsConnection_Close(c);
    natsConnection_Destroy(c);
  }
};
struct OptsDeleter {
  void operator()(natsOptions* o) const { natsOptions_Destroy(o); }
};
struct SubDeleter {
  void operator()(natsSubscription* s) const { natsSubscription_Destroy(s); }
};
struct JsDeleter {
  void operator()(jsCtx* j) const { jsCtx_Destroy(j); }
};
struct KvDeleter {
  void operator()(kvStore* k) const { kvStore_Destroy(k); }
};
struct EntryDeleter {
  void operator()(kvEntry* e) const { kvEntry_Destroy(e); }
};
using Conn = std::unique_ptr<natsConnection, ConnDeleter>;
using Msg = common::NatsMsgPtr;

int Refused(Refusals& r) {
  std::printf("refused: %s\n", r.First().c_str());
  return kRefused;
}

int Failed(const std::string& what, natsStatus s, Refusals& r) {
  // A refusal may arrive just after the call gave up: give it a moment before calling it other.
  if (r.WaitFor(300)) return Refused(r);
  std::printf("failed: %s: %s\n", what.c_str(), natsStatus_GetText(s));
  return kFailed;
}

void PrintReply(natsMsg* m) {
  const char* status = nullptr;
  if (natsMsgHeader_Get(m, "Status", &status) == NATS_OK && status) {
    const char* desc = nullptr;
    natsMsgHeader_Get(m, "Description", &desc);
    std::printf("status %s %s\n", status, desc ? desc : "");
  }
  std::printf("reply: %.*s\n", natsMsg_GetDataLength(m), natsMsg_GetData(m));
}

// Publishes with a private reply subject and waits for the reply or a refusal.
int Request(natsConnection* nc, const std::string& inbox_prefix, const std::string& subject,
            const std::string& body,
            const std::vector<std::pair<std::string, std::string>>& headers, Refusals& r) {
  char inbox[128];
  std::snprintf(
      inbox, sizeof(inbox), "%s.probe%lld", inbox_prefix.c_str(),
      static_cast<long long>(std::chrono::steady_clock::now().time_since_epoch().count()));
  natsSubscription* raw = nullptr;
  if (auto s = natsConnection_SubscribeSync(&raw, nc, inbox); s != NATS_OK)
    return Failed("subscribe to the reply inbox", s, r);
  std::unique_ptr<natsSubscription, SubDeleter> sub(raw);
  natsMsg* m_raw = nullptr;
  if (auto s = natsMsg_Create(&m_raw, subject.c_str(), inbox, body.data(),
                              static_cast<int>(body.size()));
      s != NATS_OK)
    return Failed("message", s, r);
  Msg m(m_raw);
  for (const auto& [k, v] : headers) natsMsgHeader_Add(m.get(), k.c_str(), v.c_str());
  if (auto s = natsConnection_PublishMsg(nc, m.get()); s != NATS_OK) return Failed("publish", s, r);
  natsConnection_Flush(nc);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kTimeoutMs);
  while (std::chrono::steady_clock::now() < deadline) {
    natsMsg* reply = nullptr;
    natsStatus s = natsSubscription_NextMsg(&reply, sub.get(), 50);
    if (s == NATS_OK) {
      Msg owned(reply);
      PrintReply(reply);
      return kAllowed;
    }
    if (r.WaitFor(0)) return Refused(r);
  }
  return Failed("no reply within " + std::to_string(kTimeoutMs) + " ms", NATS_TIMEOUT, r);
}

// Publishes BODY to SUBJECT once per reply subject given, nothing waited for but a refusal:
// what JetStream did with its answers is for the caller to read from the streams' state.
int PublishWithReplies(natsConnection* nc, const std::string& subject, const std::string& body,
                       const std::vector<std::string>& replies, Refusals& r) {
  for (const auto& reply : replies) {
    if (auto s = natsConnection_PublishRequest(nc, subject.c_str(), reply.c_str(), body.data(),
                                               static_cast<int>(body.size()));
        s != NATS_OK)
      return Failed("publish with reply " + reply, s, r);
  }
  if (auto s = natsConnection_Flush(nc); s != NATS_OK) return Failed("flush", s, r);
  if (r.WaitFor(300)) return Refused(r);
  std::printf("published to %s with %zu reply subjects\n", subject.c_str(), replies.size());
  return kAllowed;
}

int Subscribe(natsConnection* nc, const std::string& subject, Refusals& r) {
  natsSubscription* raw = nullptr;
  if (auto s = natsConnection_SubscribeSync(&raw, nc, subject.c_str()); s != NATS_OK)
    return Failed("subscribe", s, r);
  std::unique_ptr<natsSubscription, SubDeleter> sub(raw);
  natsConnection_Flush(nc);
  if (r.WaitFor(1000)) return Refused(r);
  std::printf("subscribed to %s\n", subject.c_str());
  return kAllowed;
}

int KvGet(natsConnection* nc, const std::string& bucket, const std::string& key, Refusals& r) {
  jsOptions jo;
  jsOptions_Init(&jo);
  jo.Wait = 1000;  // a refused read answers nothing: do not wait long for it
  jsCtx* js_raw = nullptr;
  if (auto s = natsConnection_JetStream(&js_raw, nc, &jo); s != NATS_OK)
    return Failed("JetStream", s, r);
  std::unique_ptr<jsCtx, JsDeleter> js(js_raw);
  kvStore* kv_raw = nullptr;
  if (auto s = js_KeyValue(&kv_raw, js.get(), bucket.c_str()); s != NATS_OK)
    return Failed("bind bucket " + bucket, s, r);
  std::unique_ptr<kvStore, KvDeleter> kv(kv_raw);
  kvEntry* e_raw = nullptr;
  natsStatus s = kvStore_Get(&e_raw, kv.get(), key.c_str());
  std::unique_ptr<kvEntry, EntryDeleter> e(e_raw);
  if (s == NATS_NOT_FOUND) {
    if (r.WaitFor(200)) return Refused(r);
    std::printf("key %s/%s: not found (read allowed)\n", bucket.c_str(), key.c_str());
    return kAllowed;
  }
  if (s != NATS_OK) return Failed("get " + bucket + "/" + key, s, r);
  std::printf("key %s/%s: %.*s\n", bucket.c_str(), key.c_str(), kvEntry_ValueLen(e.get()),
              static_cast<const char*>(kvEntry_Value(e.get())));
  return kAllowed;
}

// TLS as the services set it up from the same variables (common/nats_client.cpp): tls:// URLs
// make the connection secure, NATS_CA names the CA the servers are checked against, NATS_CERT
// and NATS_KEY a client certificate.
natsStatus SetTls(natsOptions* opts, const common::CommonConfig& c) {
  natsStatus s = NATS_OK;
  if (c.nats_tls) s = natsOptions_SetSecure(opts, true);
  if (s == NATS_OK && !c.nats_ca.empty())
    s = natsOptions_LoadCATrustedCertificates(opts, c.nats_ca.c_str());
  if (s == NATS_OK && !c.nats_cert.empty())
    s = natsOptions_LoadCertificatesChain(opts, c.nats_cert.c_str(), c.nats_key.c_str());
  return s;
}

int Usage() {
  std::fprintf(stderr,
               "usage: nats_probe req SUBJECT [BODY] | pub SUBJECT BODY [K=V]... | sub SUBJECT | "
               "kvget BUCKET KEY | reqs SUBJECT... | reply SUBJECT BODY REPLY...\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return Usage();
  const std::string op = argv[1];
  auto reader = common::ConfigReader::FromProcess();
  common::CommonConfig config;
  try {
    config = common::ReadCommonConfig(reader, "127.0.0.1:0");
    reader.Finish();
  } catch (const common::ConfigError& e) {
    std::fprintf(stderr, "nats_probe: %s\n", e.what());
    return 2;
  }
  Refusals refusals;
  int rc = kFailed;
  {
    natsOptions* o_raw = nullptr;
    natsOptions_Create(&o_raw);
    std::unique_ptr<natsOptions, OptsDeleter> opts(o_raw);
    std::vector<const char*> urls;
    for (const auto& u : config.nats_urls) urls.push_back(u.c_str());
    natsOptions_SetServers(opts.get(), urls.data(), static_cast<int>(urls.size()));
    if (!config.nats_user.empty())
      natsOptions_SetUserInfo(opts.get(), config.nats_user.c_str(), config.nats_password.c_str());
    // The user's own inbox prefix, as the services set it (NATS_INBOX_PREFIX).
    if (!config.nats_inbox_prefix.empty())
      natsOptions_SetCustomInboxPrefix(opts.get(), config.nats_inbox_prefix.c_str());
    if (auto s = SetTls(opts.get(), config); s != NATS_OK) {
      std::printf("failed: TLS options: %s %s\n", natsStatus_GetText(s),
                  nats_GetLastError(nullptr));
      return kFailed;
    }
    natsOptions_SetErrorHandler(opts.get(), OnError, &refusals);
    natsOptions_SetName(opts.get(), "nats_probe");
    natsConnection* c_raw = nullptr;
    if (auto s = natsConnection_Connect(&c_raw, opts.get()); s != NATS_OK) {
      const char* text = nullptr;
      natsConnection_GetLastError(nullptr, &text);
      std::printf("failed: connect as %s: %s %s\n", config.nats_user.c_str(), natsStatus_GetText(s),
                  text ? text : "");
      return kFailed;
    }
    Conn nc(c_raw);
    const std::string inbox =
        config.nats_inbox_prefix.empty() ? "_INBOX" : config.nats_inbox_prefix;
    if (op == "req") {
      rc = Request(nc.get(), inbox, argv[2], argc > 3 ? argv[3] : "", {}, refusals);
    } else if (op == "pub" && argc >= 4) {
      std::vector<std::pair<std::string, std::string>> headers;
      for (int i = 4; i < argc; ++i) {
        const char* eq = std::strchr(argv[i], '=');
        if (eq == nullptr) return Usage();
        headers.emplace_back(std::string(argv[i], static_cast<size_t>(eq - argv[i])),
                             std::string(eq + 1));
      }
      rc = Request(nc.get(), inbox, argv[2], argv[3], headers, refusals);
    } else if (op == "sub") {
      rc = Subscribe(nc.get(), argv[2], refusals);
    } else if (op == "reqs") {
      for (int i = 2; i < argc && (i == 2 || rc == kAllowed); ++i)
        rc = Request(nc.get(), inbox, argv[i], "", {}, refusals);
    } else if (op == "reply" && argc >= 5) {
      rc = PublishWithReplies(nc.get(), argv[2], argv[3],
                              std::vector<std::string>(argv + 4, argv + argc), refusals);
    } else if (op == "kvget" && argc == 4) {
      rc = KvGet(nc.get(), argv[2], argv[3], refusals);
    } else {
      return Usage();
    }
  }
  nats_CloseAndWait(2000);
  return rc;
}
