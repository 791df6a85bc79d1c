#include "tests/support/nats_cluster.h"

#include <nats/nats.h>

#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <thread>

#include <iostream>

#include "common/config.h"
#include "common/crash_guard.h"
#include "common/nats_kv.h"
#include "common/nats_msg_ptr.h"
#include "common/nats_status.h"
#include "common/topology.h"

namespace testsupport {

uint64_t DieReading(common::NatsClient& client, const common::ConsumerSpec& spec, size_t messages,
                    uint64_t deliveries, const std::string& msg_id, const std::string& instance,
                    uint32_t stops) {
  auto fail = [](const std::string& why) {
    std::cerr << "DieReading: " << why << "\n";
    return uint64_t{0};
  };
  uint64_t seq = 0;
  {
    auto consumer = common::PullConsumer::Bind(client, spec);
    if (!consumer.ok()) return fail("bind: " + consumer.error().message);
    for (uint64_t delivery = 1; delivery <= deliveries; ++delivery) {
      // A fetch waits past the ack wait, when the unacked messages come back.
      auto got = (*consumer)->Fetch(static_cast<int>(messages) + 10, spec.ack_wait * 2);
      if (!got.ok()) return fail("fetch: " + got.error().message);
      if (got->size() != messages) {
        return fail("delivery " + std::to_string(delivery) + " brought " +
                    std::to_string(got->size()) + " messages");
      }
      for (auto& m : *got) {
        if (m.num_delivered() != delivery) return fail("a message out of step");
        if (m.Header("Nats-Msg-Id") == msg_id) seq = m.stream_seq();
      }
    }
  }
  if (seq == 0) return fail("no message " + msg_id);
  auto bucket = common::KvBucket::Bind(client, common::topology::kCrashGuardBucket);
  if (!bucket.ok()) return fail("crash_guard: " + bucket.error().message);
  auto put = (*bucket)->Put(
      common::crash_guard::Key(spec.durable, seq),
      common::crash_guard::Encode({deliveries, kDiedAtUnixMs, instance, "1@1", stops}));
  if (!put.ok()) return fail("marker: " + put.error().message);
  return seq;
}

namespace {

using Clock = std::chrono::steady_clock;

struct StreamInfoDeleter {
  void operator()(jsStreamInfo* si) const { jsStreamInfo_Destroy(si); }
};
struct ConsumerInfoDeleter {
  void operator()(jsConsumerInfo* ci) const { jsConsumerInfo_Destroy(ci); }
};
std::string LeaderName(jsClusterInfo* cluster) {
  return cluster != nullptr && cluster->Leader != nullptr ? cluster->Leader : "";
}

// One HTTP GET of a monitoring endpoint, parsed; null when it failed.
nlohmann::json MonitorJson(const std::string& url) {
  int rc = 0;
  std::string body = Capture("curl -s --max-time 2 '" + url + "' 2>/dev/null", &rc);
  if (rc != 0 || body.empty()) return nullptr;
  return nlohmann::json::parse(body, nullptr, false);
}

}  // namespace

std::unique_ptr<common::NatsClient> ConnectNats(const TestStack& stack) {
  common::CommonConfig c;
  c.nats_urls = {stack.Env("NATS_URL")};
  auto client = common::NatsClient::Connect(c, {});
  if (!client) throw std::runtime_error("connect to NATS: " + client.error().message);
  return std::move(*client);
}

common::Result<std::unique_ptr<common::NatsClient>> ConnectFromEnvironment() {
  auto reader = common::ConfigReader::FromProcess();
  auto config = common::ReadCommonConfig(reader, "127.0.0.1:0");
  reader.Finish();
  return common::NatsClient::Connect(config, {});
}

std::unique_ptr<common::NatsClient> InitAndConnect(const TestStack& stack) {
  if (Run("NATS_URL=" + stack.Env("NATS_URL") + " " + BinaryDir() +
          "/platformctl/platformctl init >/dev/null") != 0) {
    throw std::runtime_error("platformctl init failed");
  }
  return ConnectNats(stack);
}

common::Status AddRawStream(common::NatsClient& client, const RawStream& spec) {
  jsStreamConfig cfg;
  jsStreamConfig_Init(&cfg);
  cfg.Name = spec.name.c_str();
  const char* subjects[] = {spec.subject.c_str()};
  cfg.Subjects = subjects;
  cfg.SubjectsLen = 1;
  cfg.Retention = js_LimitsPolicy;
  cfg.Storage = js_FileStorage;
  cfg.MaxMsgsPerSubject = spec.max_msgs_per_subject;
  cfg.AllowDirect = spec.allow_direct;
  cfg.MaxMsgSize = spec.max_msg_size;
  jsStreamInfo* si = nullptr;
  natsStatus s = js_AddStream(&si, client.js(), &cfg, nullptr, nullptr);
  jsStreamInfo_Destroy(si);
  if (s != NATS_OK) return common::NatsError(s, "add stream " + spec.name);
  return common::Status();
}

int NodeOfServer(const std::string& server_name) {
  const std::string prefix = "nats-";
  if (server_name.rfind(prefix, 0) != 0 || server_name.size() == prefix.size()) return 0;
  for (size_t i = prefix.size(); i < server_name.size(); ++i) {
    if (server_name[i] < '0' || server_name[i] > '9') return 0;
  }
  return std::stoi(server_name.substr(prefix.size()));
}

int LeaderOf(common::NatsClient& client, const RaftAsset& asset) {
  jsOptions jo;
  jsOptions_Init(&jo);
  jo.Wait = 2000;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  if (asset.consumer.empty()) {
    jsStreamInfo* raw = nullptr;
    if (js_GetStreamInfo(&raw, client.js(), asset.stream.c_str(), &jo, &jerr) != NATS_OK) return 0;
    std::unique_ptr<jsStreamInfo, StreamInfoDeleter> si(raw);
    return NodeOfServer(LeaderName(si->Cluster));
  }
  jsConsumerInfo* raw = nullptr;
  if (js_GetConsumerInfo(&raw, client.js(), asset.stream.c_str(), asset.consumer.c_str(), &jo,
                         &jerr) != NATS_OK) {
    return 0;
  }
  std::unique_ptr<jsConsumerInfo, ConsumerInfoDeleter> ci(raw);
  return NodeOfServer(LeaderName(ci->Cluster));
}

std::string RouteMap(const TestStack& stack) {
  // nats-server 2.9's /routez names a route's far end by server id only: /varz maps ids.
  std::map<std::string, std::string> names;
  for (int node = 1; node <= stack.nats_nodes(); ++node) {
    auto varz = MonitorJson(stack.NatsMonitorUrl(node) + "/varz");
    if (varz.is_object()) names[varz.value("server_id", "")] = varz.value("server_name", "");
  }
  std::string out;
  for (int node = 1; node <= stack.nats_nodes(); ++node) {
    out += (out.empty() ? "" : "; ") + std::string("nats-") + std::to_string(node) + " ->";
    auto routez = MonitorJson(stack.NatsMonitorUrl(node) + "/routez");
    if (!routez.is_object() || !routez["routes"].is_array()) {
      out += " (no answer)";
      continue;
    }
    if (routez["routes"].empty()) out += " (none)";
    // Each far end once: 2.10 and later keep a pool of route connections to each peer.
    std::set<std::string> ends;
    for (const auto& r : routez["routes"]) {
      auto it = names.find(r.value("remote_id", ""));
      ends.insert(it != names.end() ? it->second : r.value("remote_id", "?"));
    }
    for (const auto& e : ends) out += " " + e;
  }
  return out;
}

int MetaLeader(const TestStack& stack, int ask) {
  auto jsz = MonitorJson(stack.NatsMonitorUrl(ask) + "/jsz");
  if (!jsz.is_object() || !jsz.contains("meta_cluster")) return 0;
  return NodeOfServer(jsz["meta_cluster"].value("leader", ""));
}

common::Status StepDown(common::NatsClient& client, const RaftAsset& asset) {
  std::string subject = asset.consumer.empty() ? "$JS.API.STREAM.LEADER.STEPDOWN." + asset.stream
                                               : "$JS.API.CONSUMER.LEADER.STEPDOWN." +
                                                     asset.stream + "." + asset.consumer;
  natsMsg* raw = nullptr;
  natsStatus s = natsConnection_RequestString(&raw, client.conn(), subject.c_str(), "", 3000);
  if (s != NATS_OK) return common::NatsError(s, "step down " + asset.Name());
  common::NatsMsgPtr reply(raw);
  const char* data = natsMsg_GetData(reply.get());
  std::string body = data != nullptr ? std::string(data, natsMsg_GetDataLength(reply.get())) : "";
  auto answer = nlohmann::json::parse(body, nullptr, false);
  if (answer.is_object() && answer.value("success", false)) return common::Status::Ok();
  return common::Error::Retryable("step down " + asset.Name() + ": " + body);
}

std::vector<RaftAsset> GatherLeadership(common::NatsClient& client, int node,
                                        const std::vector<RaftAsset>& assets, int timeout_ms) {
  auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  std::vector<RaftAsset> left;
  for (const auto& asset : assets) {
    int leader = 0;
    while (true) {
      leader = LeaderOf(client, asset);
      if (leader == node || Clock::now() >= deadline) break;
      if (leader != 0) {
        (void)StepDown(client, asset);
        // The election picks one of the other replicas: wait until one of them leads.
        WaitFor(
            [&] {
              int now = LeaderOf(client, asset);
              return now != 0 && now != leader;
            },
            5000);
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
      }
    }
    if (leader != node) left.push_back(asset);
  }
  return left;
}

int ConnectedNode(const TestStack& stack, const std::string& name_prefix) {
  std::vector<std::string> urls;
  for (int node = 1; node <= stack.nats_nodes(); ++node) urls.push_back(stack.NatsMonitorUrl(node));
  return ConnectedNode(urls, name_prefix);
}

int ConnectedNode(const std::vector<std::string>& monitor_urls, const std::string& name_prefix) {
  for (size_t i = 0; i < monitor_urls.size(); ++i) {
    auto connz = MonitorJson(monitor_urls[i] + "/connz?limit=1024");
    if (!connz.is_object() || !connz["connections"].is_array()) continue;
    for (const auto& c : connz["connections"]) {
      if (c.value("name", "").rfind(name_prefix, 0) == 0) return static_cast<int>(i) + 1;
    }
  }
  return 0;
}

common::Result<common::PubAck> PublishUntilAcked(common::NatsClient& client,
                                                 const common::OutMessage& m, int timeout_ms,
                                                 int* tries) {
  if (m.msg_id.empty()) {
    return common::Error::Invalid("a retried publish needs a Nats-Msg-Id, or it may store twice");
  }
  auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  int n = 0;
  while (true) {
    ++n;
    auto ack = common::PublishSync(client, m);
    if (ack.ok() || Clock::now() >= deadline) {
      if (tries != nullptr) *tries = n;
      return ack;
    }
    // Whatever the error: an election answers with several kinds, and the id makes a retry safe.
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace testsupport
