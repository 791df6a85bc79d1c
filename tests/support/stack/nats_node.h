// Test support: one nats-server a test starts, on ports the OS picks, and the configuration shapes
// scripts/stack writes (one node; a JetStream cluster with mutual TLS on its routes).
//
// A NatsNode owns its process, its config file <dir>/<name>.conf, its log <dir>/<name>.log and
// its store <dir>/<name>/ (left on disk: a restarted node finds its data, the test's directory
// goes with the stack). It writes `listen` and `http` itself: 127.0.0.1:-1 at the first start,
// so the server binds what the OS gives it and names it in its ports file (ports_file_dir), and
// from then on the ports it learned, so a node started again after Stop or Kill comes back on
// the same client and monitoring ports. Route ports are part of the body (a cluster's nodes must
// know each other's before they start): MakeNatsNodes picks them with PickPort.
//
// Not thread-safe: the test's main thread starts, stops and asks a node; the accessors of ports
// and URLs are plain reads and fine from any thread once Start has returned.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "tests/support/stack/process.h"

namespace testsupport::stack {

struct NatsNodeSpec {
  std::string name;  // file stem in dir, e.g. "nats" or "nats-2"
  std::string dir;
  std::string bin;   // the nats-server binary
  std::string body;  // everything after listen/http/ports_file_dir: jetstream, cluster, accounts
};

class NatsNode : public ServerProcess {  // stopped by SIGTERM
 public:
  explicit NatsNode(NatsNodeSpec spec);
  ~NatsNode() = default;  // the Process stops the server
  NatsNode(const NatsNode&) = delete;
  NatsNode& operator=(const NatsNode&) = delete;

  // Writes the config and spawns the server unless it runs; does not wait.
  void Spawn();
  // Waits (up to timeout_ms) for the ports file and then /healthz answering 200 while the
  // process lives. In a cluster /healthz says 200 once the node has a meta leader and its
  // streams are current: spawn every node before waiting for the first. Throws with the log tail.
  void WaitReady(int timeout_ms = 60'000);
  void Start() {
    Spawn();
    WaitReady();
  }

  const std::string& name() const { return spec_.name; }
  int client_port() const { return client_port_; }
  int monitor_port() const { return monitor_port_; }
  std::string url() const { return "nats://127.0.0.1:" + std::to_string(client_port_); }
  std::string monitor_url() const { return "http://127.0.0.1:" + std::to_string(monitor_port_); }
  std::string conf_path() const { return spec_.dir + "/" + spec_.name + ".conf"; }
  std::string log_path() const { return spec_.dir + "/" + spec_.name + ".log"; }
  std::string store_dir() const { return spec_.dir + "/" + spec_.name; }

 private:
  void WriteConf() const;
  bool ReadPortsFile();

  NatsNodeSpec spec_;
  int client_port_ = 0;  // 0 until the first start has learned it
  int monitor_port_ = 0;
};

// The body of scripts/stack's one-node configuration (server name `server_name`).
std::string SingleNodeBody(const std::string& server_name, const std::string& store);

// The body of node j (1-based) of scripts/stack's cluster: sync_interval always, routes to the
// other nodes over mutual TLS (certificates in tls_dir), the default route pool, no_advertise,
// JetStream in account STACK with the $SYS exports of RAFTZ and JSZ, no_auth_user stack.
std::string ClusterNodeBody(int j, const std::string& store, const std::string& cluster_name,
                            const std::vector<int>& route_ports, const std::string& tls_dir);

// A CA (dir/ca.pem) and one certificate for every node (dir/node.pem, dir/node-key.pem) naming
// the given IP addresses, for serverAuth and clientAuth, made with openssl as scripts/lib/
// common.sh's make_route_tls makes them (its messages in dir/openssl.log). A dir that holds them
// is left as it is. Throws when openssl fails.
void MakeRouteTls(const std::string& dir, const std::vector<std::string>& ips);

// scripts/stack's NATS: one node "nats" (nodes == 1) or a cluster "nats-1".."nats-<nodes>"
// named after `tag` (server name stack_<tag>, cluster name stack_<tag>), files in dir.
std::vector<std::unique_ptr<NatsNode>> MakeNatsNodes(const std::string& dir, const std::string& bin,
                                                     int nodes, const std::string& tag);

// Spawns every node, then waits for each (a cluster elects its meta leader only when a quorum
// runs); with two or more, also until one node leads a meta group in which every other node is
// a current follower (its /jsz). Throws.
void StartNodes(const std::vector<NatsNode*>& nodes);

// Whether a node's /jsz answer shows it leading the meta group with every other of `nodes` nodes
// a current, online follower: a cluster is ready for three-replica streams only then. Each
// node's /healthz answers before that: nats-server 2.10.27 then refused a three-replica stream
// "no suitable peers for placement" (10005) 0.1 s after every node was healthy, on a loaded
// machine, and 2.15.1 a KV bucket "peer offline" (the partition fixture, 2026-12-07).
bool LeadsWholeMeta(const std::string& jsz, size_t nodes);

}  // namespace testsupport::stack
