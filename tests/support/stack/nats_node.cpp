#include "tests/support/stack/nats_node.h"

#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <thread>

namespace testsupport::stack {
namespace {

using Clock = std::chrono::steady_clock;

// The port of the first URL in a ports file's list ("nats://127.0.0.1:4222"); 0 when none.
int PortOf(const nlohmann::json& list) {
  if (!list.is_array() || list.empty() || !list[0].is_string()) return 0;
  const std::string url = list[0].get<std::string>();
  auto colon = url.rfind(':');
  if (colon == std::string::npos) return 0;
  return std::atoi(url.c_str() + colon + 1);
}

}  // namespace

NatsNode::NatsNode(NatsNodeSpec spec) : ServerProcess(SIGTERM), spec_(std::move(spec)) {}

void NatsNode::WriteConf() const {
  auto address = [](int port) {
    return "\"127.0.0.1:" + (port == 0 ? std::string("-1") : std::to_string(port)) + "\"";
  };
  const std::string tmp = conf_path() + ".tmp";
  {
    std::ofstream out(tmp);
    out << "# written by tests/support/stack/nats_node.cpp\n"
        << "listen: " << address(client_port_) << "\n"
        << "http: " << address(monitor_port_) << "\n"
        << "ports_file_dir: \"" << spec_.dir << "\"\n"
        << spec_.body;
    if (!out) throw std::runtime_error("cannot write " + tmp);
  }
  std::filesystem::rename(tmp, conf_path());
}

void NatsNode::Spawn() {
  if (process_.Running()) return;
  std::filesystem::create_directories(store_dir());
  WriteConf();
  ProcessSpec p;
  p.argv = {spec_.bin, "-c", conf_path()};
  p.env = InheritedEnv();
  p.log_path = log_path();
  p.die_with_parent = !KeepServers();
  process_.Start(p);
}

bool NatsNode::ReadPortsFile() {
  const std::string bin = std::filesystem::path(spec_.bin).filename();
  const std::string path = spec_.dir + "/" + bin + "_" + std::to_string(pid()) + ".ports";
  std::ifstream in(path);
  if (!in) return false;
  auto j = nlohmann::json::parse(in, nullptr, false);
  if (!j.is_object()) return false;  // being written
  int client = PortOf(j["nats"]), monitor = PortOf(j["monitoring"]);
  if (client == 0 || monitor == 0) return false;
  client_port_ = client;
  monitor_port_ = monitor;
  // From now on the config names them: a restart comes back on the same ports.
  WriteConf();
  return true;
}

void NatsNode::WaitReady(int timeout_ms) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  bool ports = client_port_ != 0 && monitor_port_ != 0;
  while (Clock::now() < deadline) {
    if (!process_.Running()) {
      Fail(spec_.name + " exited during startup (status " + std::to_string(process_.status()) + ")",
           process_);
    }
    if (!ports) ports = ReadPortsFile();
    if (ports && HttpStatus(monitor_port_, "/healthz") == 200) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(ports ? 200 : 20));
  }
  Fail(spec_.name + " not healthy within " + std::to_string(timeout_ms / 1000) + " s" +
           (ports ? " on " + monitor_url() + "/healthz" : " (no ports file)"),
       process_);
}

namespace {

// Both shapes' message size and JetStream block; `more` goes inside the block.
std::string JetStream(const std::string& store, const std::string& more) {
  return "max_payload: 8MB\njetstream {\n  store_dir: \"" + store +
         "\"\n  max_memory_store: 1GB\n  max_file_store: 20GB\n" + more + "}\n";
}

}  // namespace

std::string SingleNodeBody(const std::string& server_name, const std::string& store) {
  return "server_name: \"" + server_name + "\"\n" + JetStream(store, "");
}

std::string ClusterNodeBody(int j, const std::string& store, const std::string& cluster_name,
                            const std::vector<int>& route_ports, const std::string& tls_dir) {
  std::string routes;
  for (size_t r = 0; r < route_ports.size(); ++r) {
    if (static_cast<int>(r) + 1 == j) continue;
    routes += (routes.empty() ? "" : ", ") + std::string("\"nats-route://127.0.0.1:") +
              std::to_string(route_ports[r]) + "\"";
  }
  const std::string n = std::to_string(route_ports.size());
  return "# node " + std::to_string(j) + " of a " + n + "-node cluster, as scripts/stack's\n" +
         "server_name: \"nats-" + std::to_string(j) + "\"\n" +
         JetStream(store,
                   "  # As in production (ansible/roles/nats): every write synced before it is "
                   "acknowledged.\n"
                   "  sync_interval: always\n") +
         "cluster {\n"
         "  name: \"" +
         cluster_name + "\"\n  listen: \"127.0.0.1:" + std::to_string(route_ports.at(j - 1)) +
         "\"\n  routes: [ " + routes +
         " ]\n"
         "  # As in production: mutual TLS on the routes, and the server's default route pool (no\n"
         "  # pool_size: 3 connections per peer, plus one for the system account).\n"
         "  tls {\n"
         "    cert_file: \"" +
         tls_dir + "/node.pem\"\n    key_file: \"" + tls_dir + "/node-key.pem\"\n    ca_file: \"" +
         tls_dir +
         "/ca.pem\"\n"
         "    verify: true\n"
         "    timeout: 2\n"
         "  }\n"
         "  # Clients use only the servers they were given: a test cuts one off by listing one.\n"
         "  no_advertise: true\n"
         "}\n"
         "# As the deployment (ansible role nats): JetStream in an account of its own, and the\n"
         "# system account's raftz and jsz requests exported to it, which platformctl's erasure\n"
         "# checks send (see platformctl/raft_watch.h). A client without credentials is user\n"
         "# stack of account STACK.\n"
         "accounts {\n"
         "  \"$SYS\" {\n"
         "    exports: [\n"
         "      { service: \"$SYS.REQ.SERVER.PING.RAFTZ\", accounts: [STACK], response_type: "
         "\"stream\" }\n"
         "      { service: \"$SYS.REQ.SERVER.PING.JSZ\", accounts: [STACK], response_type: "
         "\"stream\" }\n"
         "    ]\n"
         "  }\n"
         "  STACK {\n"
         "    jetstream: enabled\n"
         "    users: [ { user: stack, password: stack } ]\n"
         "    imports: [\n"
         "      { service: { account: \"$SYS\", subject: \"$SYS.REQ.SERVER.PING.RAFTZ\" } }\n"
         "      { service: { account: \"$SYS\", subject: \"$SYS.REQ.SERVER.PING.JSZ\" } }\n"
         "    ]\n"
         "  }\n"
         "}\n"
         "no_auth_user: stack\n";
}

void MakeRouteTls(const std::string& dir, const std::vector<std::string>& ips) {
  namespace fs = std::filesystem;
  if (fs::exists(dir + "/node.pem") && fs::exists(dir + "/node-key.pem") &&
      fs::exists(dir + "/ca.pem")) {
    return;
  }
  fs::create_directories(dir);
  std::string san;
  for (const auto& ip : ips) san += (san.empty() ? "IP:" : ",IP:") + ip;
  std::ofstream(dir + "/node.ext")
      << "subjectAltName=" << san << "\nextendedKeyUsage=serverAuth,clientAuth\n";
  const std::vector<std::string> ec = {"-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"};
  std::vector<std::vector<std::string>> steps = {
      {"openssl", "req", "-x509", "-new", "-nodes"},
      {"openssl", "req", "-new", "-nodes"},
      {"openssl", "x509", "-req", "-in", "node.csr", "-CA", "ca.pem", "-CAkey", "ca-key.pem",
       "-CAcreateserial", "-days", "30", "-extfile", "node.ext", "-out", "node.pem.tmp"}};
  steps[0].insert(steps[0].end(), ec.begin(), ec.end());
  steps[0].insert(steps[0].end(),
                  {"-days", "30", "-subj", "/CN=test route CA", "-keyout", "ca-key.pem", "-out",
                   "ca.pem", "-addext", "basicConstraints=critical,CA:TRUE", "-addext",
                   "keyUsage=critical,keyCertSign,cRLSign"});
  steps[1].insert(steps[1].end(), ec.begin(), ec.end());
  steps[1].insert(steps[1].end(),
                  {"-subj", "/CN=node", "-keyout", "node-key.pem.tmp", "-out", "node.csr"});
  for (const auto& argv : steps) {
    ProcessSpec p{argv, InheritedEnv(), dir + "/openssl.log", "", dir, true};
    if (Process::RunToEnd(p, 60'000) != 0) {
      throw std::runtime_error("openssl could not make the route certificates in " + dir +
                               " (see " + dir + "/openssl.log)");
    }
  }
  fs::permissions(dir + "/node-key.pem.tmp", fs::perms::owner_read | fs::perms::owner_write);
  fs::rename(dir + "/node-key.pem.tmp", dir + "/node-key.pem");
  fs::rename(dir + "/node.pem.tmp", dir + "/node.pem");
}

std::vector<std::unique_ptr<NatsNode>> MakeNatsNodes(const std::string& dir, const std::string& bin,
                                                     int nodes, const std::string& tag) {
  std::vector<std::unique_ptr<NatsNode>> out;
  if (nodes == 1) {
    out.push_back(std::make_unique<NatsNode>(
        NatsNodeSpec{"nats", dir, bin, SingleNodeBody("stack_" + tag, dir + "/nats")}));
    return out;
  }
  if (nodes < 3 || nodes > 5) {
    throw std::runtime_error("a NATS cluster of " + std::to_string(nodes) + " nodes: 1 or 3..5");
  }
  const std::string tls = dir + "/route-tls";
  MakeRouteTls(tls, {"127.0.0.1"});
  // Every node's routes name every other node's route port: chosen before any node starts.
  std::set<int> taken;
  std::vector<int> route_ports;
  while (route_ports.size() < static_cast<size_t>(nodes)) {
    int port = PickPort();
    if (taken.insert(port).second) route_ports.push_back(port);
  }
  for (int j = 1; j <= nodes; ++j) {
    const std::string name = "nats-" + std::to_string(j);
    out.push_back(std::make_unique<NatsNode>(NatsNodeSpec{
        name, dir, bin, ClusterNodeBody(j, dir + "/" + name, "stack_" + tag, route_ports, tls)}));
  }
  return out;
}

bool LeadsWholeMeta(const std::string& jsz_body, size_t nodes) {
  auto jsz = nlohmann::json::parse(jsz_body, nullptr, false);
  if (!jsz.is_object() || !jsz.contains("meta_cluster")) return false;
  const auto& meta = jsz["meta_cluster"];
  if (!meta.is_object() || !meta.contains("replicas") || !meta["replicas"].is_array()) {
    return false;  // a follower's answer: only the leader lists the replicas
  }
  const auto& replicas = meta["replicas"];
  if (replicas.size() != nodes - 1) return false;
  for (const auto& r : replicas) {
    if (!r.is_object() || r.value("current", false) != true || r.value("offline", false)) {
      return false;
    }
  }
  return true;
}

void StartNodes(const std::vector<NatsNode*>& nodes) {
  for (auto* n : nodes) n->Spawn();
  for (auto* n : nodes) n->WaitReady();
  if (nodes.size() < 2) return;
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  while (Clock::now() < deadline) {
    for (auto* n : nodes) {
      if (LeadsWholeMeta(HttpGetBody(n->monitor_port(), "/jsz"), nodes.size())) return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  Fail("no node of the cluster leads a meta group of all " + std::to_string(nodes.size()) +
           " nodes within 60 s (/jsz meta_cluster)",
       nodes.front()->process());
}

}  // namespace testsupport::stack
