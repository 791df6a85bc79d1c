#include "tests/cluster/ctl_cluster.h"

#include <nats/nats.h>

#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/nats_msg_ptr.h"

namespace ctlcluster {
namespace {

using Clock = std::chrono::steady_clock;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// One raw JetStream API request; the answer's body, or "" when none came.
std::string Request(common::NatsClient& client, const std::string& subject, int timeout_ms) {
  natsMsg* raw = nullptr;
  natsStatus s = natsConnection_RequestString(&raw, client.conn(), subject.c_str(), "", timeout_ms);
  common::NatsMsgPtr reply(raw);
  if (s != NATS_OK) return "";
  const char* d = natsMsg_GetData(raw);
  return d != nullptr ? std::string(d, static_cast<size_t>(natsMsg_GetDataLength(raw))) : "";
}

}  // namespace

std::string Run::Show() const {
  std::ostringstream o;
  o << "rc " << rc << " after " << seconds << " s\n--- stdout\n" << out << "--- stderr\n" << err;
  return o.str();
}

Cluster::Cluster() : stack({"nats"}, testsupport::StackOptions{.nats_nodes = 3}) {
  // The stack waits until one node leads a meta group of three current peers (StartNodes), but
  // placement also needs each peer's own report of its JetStream resources, which comes on its
  // own clock: nats-server 2.10.27 refused a three-replica stream "no suitable peers for
  // placement" (10005; seen on a loaded machine, 0.1 s after every /healthz answered). init is
  // idempotent, so it is run again, as an operator would, for up to 30 s.
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  auto r = Ctl("init --replicas 3");
  while (r.rc != 0 && r.out.find("no suitable peers for placement") != std::string::npos &&
         Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    r = Ctl("init --replicas 3");
  }
  if (r.rc != 0) FAIL("platformctl init --replicas 3: " << r.Show());
}

Cluster::~Cluster() { Resume(); }

Run Cluster::Ctl(const std::string& args) {
  const std::string err_path = stack.dir() + "/ctl.stderr";
  Run r;
  auto start = Clock::now();
  r.out =
      testsupport::Capture("NATS_URL=" + stack.Env("NATS_URL") + " " + testsupport::BinaryDir() +
                               "/platformctl/platformctl " + args + " </dev/null 2>" + err_path,
                           &r.rc);
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  r.err = ReadFile(err_path);
  return r;
}

std::unique_ptr<common::NatsClient> Cluster::Connect(int skip) {
  common::CommonConfig c;
  for (int j = 1; j <= stack.nats_nodes(); ++j) {
    if (j != skip) c.nats_urls.push_back(stack.NatsUrl(j));
  }
  common::NatsClient::Options o;
  o.client_name = "ctl-cluster-test";
  o.request_timeout_ms = 2000;
  auto client = common::NatsClient::Connect(c, o);
  if (!client) FAIL("connect to NATS: " << client.error().message);
  return std::move(*client);
}

int Cluster::LeaderOf(common::NatsClient& client, const std::string& stream) {
  auto j =
      nlohmann::json::parse(Request(client, "$JS.API.STREAM.INFO." + stream, 2000), nullptr, false);
  if (!j.is_object() || !j.contains("cluster")) return 0;
  return testsupport::NodeOfServer(j["cluster"].value("leader", ""));
}

std::vector<std::string> Cluster::Consumers(common::NatsClient& client, const std::string& stream) {
  auto until = Clock::now() + std::chrono::seconds(30);
  std::string last;
  while (Clock::now() < until) {
    last = Request(client, "$JS.API.CONSUMER.NAMES." + stream, 2000);
    auto j = nlohmann::json::parse(last, nullptr, false);
    if (j.is_object() && j.contains("consumers")) {
      std::vector<std::string> out;
      if (j["consumers"].is_array()) {
        for (const auto& n : j["consumers"]) out.push_back(n.get<std::string>());
      }
      return out;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  FAIL("consumer names of " << stream << ": no answer in 30 s (last: " << last << ")");
  return {};
}

bool Cluster::WaitAllCurrent(common::NatsClient& client, const std::vector<std::string>& streams) {
  return testsupport::WaitFor(
      [&] {
        for (const auto& stream : streams) {
          auto j = nlohmann::json::parse(Request(client, "$JS.API.STREAM.INFO." + stream, 2000),
                                         nullptr, false);
          if (!j.is_object() || !j.contains("cluster")) return false;
          const auto& cl = j["cluster"];
          if (cl.value("leader", "").empty() || !cl.contains("replicas")) return false;
          if (cl["replicas"].size() + 1 < j["config"].value("num_replicas", 1u)) return false;
          for (const auto& r : cl["replicas"]) {
            if (!r.value("current", false) || r.value("offline", false) || r.value("lag", 0) != 0) {
              return false;
            }
          }
        }
        return true;
      },
      60'000);
}

void Cluster::Pause(int node) {
  Resume();
  REQUIRE(stack.nats(node).Running());
  stack.nats(node).Pause();
  paused_ = node;
}

void Cluster::Resume() {
  if (paused_ == 0) return;
  stack.nats(paused_).Resume();
  paused_ = 0;
}

std::string Cluster::StoreDir(int node) const {
  return stack.nats(node).store_dir() + "/jetstream";
}

bool Cluster::OnDisk(int node, const std::string& text, const std::string& part) const {
  std::string where = StoreDir(node);
  if (part == "_js_") {
    where += "/'$SYS'/_js_";
  } else if (!part.empty()) {
    where += "/STACK/" + part;  // the cluster's JetStream account (stack/nats_node.h)
  }
  return testsupport::Run("grep -rqa -- '" + text + "' " + where + " 2>/dev/null") == 0;
}

}  // namespace ctlcluster
