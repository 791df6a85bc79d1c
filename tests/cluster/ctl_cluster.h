// platformctl on a three-node JetStream cluster (TestStack with nats_nodes 3, NATS only):
// the streams at 3 replicas, dead letters seeded, platformctl runs against every node's URL
// (as an operator's NATS_URL lists them) with their duration, a node paused or killed, the
// consumers each DLQ has, and the payload grep of one node's store.
//
// Test main thread only.
#pragma once

#include <signal.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "common/nats_client.h"
#include "tests/platformctl/dlq_fixture.h"
#include "tests/support/test_stack.h"

namespace ctlcluster {

struct Run {
  int rc = -1;
  std::string out, err;
  double seconds = 0;
  std::string Show() const;  // for failure messages: rc, time, both outputs
};

class Cluster {
 public:
  Cluster();   // starts the stack, runs init --replicas 3; FAILs when that does not work
  ~Cluster();  // resumes a paused node first

  Run Ctl(const std::string& args);
  // A client of the nodes other than `skip` (0: every node).
  std::unique_ptr<common::NatsClient> Connect(int skip = 0);

  // The node (1..3) leading a stream, asked through `client`; 0 when none answers.
  int LeaderOf(common::NatsClient& client, const std::string& stream);
  // The consumer names the cluster has for the stream (its assignments, so also one whose
  // node is down); FAILs when the cluster does not answer within 30 s.
  std::vector<std::string> Consumers(common::NatsClient& client, const std::string& stream);

  // Waits until every replica of each stream is current with no lag (60 s at most; false then).
  bool WaitAllCurrent(common::NatsClient& client, const std::vector<std::string>& streams);

  // SIGSTOP / SIGCONT of node j's nats-server (the destructor resumes it).
  void Pause(int node);
  void Resume();

  // Whether `text` occurs in any file under node j's store, or under one part of it:
  // "_js_" (the raft logs), "streams/<NAME>" (a stream's block files).
  bool OnDisk(int node, const std::string& text, const std::string& part = "") const;
  std::string StoreDir(int node) const;

  testsupport::TestStack stack;

 private:
  int paused_ = 0;
};

}  // namespace ctlcluster
