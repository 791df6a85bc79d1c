// The services on a three-node JetStream cluster, for the NATS fault tests: a private stack
// (3 nats-server nodes, PostgreSQL, a real Umami), streams at 3 replicas (platformctl init
// --replicas 3), the real replayer and metricswriter binaries, a load publisher that keeps
// publishing through elections, and the checks of what got stored where.
//
// Test main thread only, except Load, whose thread publishes through the fixture's client
// (nats.c connections are thread-safe).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/nats_client.h"
#include "platformctl/backlog.h"
#include "tests/support/ledger.h"
#include "tests/support/test_stack.h"

namespace cluster_test {

// One of our binaries as a child process with its own /metrics port and log.
struct Service {
  std::unique_ptr<testsupport::ChildProcess> proc;
  int port = 0;
  std::string log;
  double Metric(const std::string& name, const std::string& labels = "") const;
  bool Running() const { return proc && proc->Running(); }
};

class ClusterFixture {
 public:
  explicit ClusterFixture(int site_count = 2);
  ~ClusterFixture();

  std::vector<int> AllNodes() const;
  // "nats://127.0.0.1:p1,nats://127.0.0.1:p2" for the given nodes.
  std::string Urls(const std::vector<int>& nodes) const;
  // A client of the given nodes only (the nodes do not advertise each other).
  std::unique_ptr<common::NatsClient> Connect(const std::vector<int>& nodes,
                                              const std::string& name);

  // The services, each with NATS_URL = nats_url.
  void StartReplayer(const std::string& nats_url,
                     const std::map<std::string, std::string>& extra = {});
  void StartWriter(const std::string& nats_url,
                   const std::map<std::string, std::string>& extra = {});

  // A stream's state; retried while the cluster elects a leader (FAILs after 30 s).
  platformctl::backlog::StreamReading Read(const std::string& stream);
  // Waits until the stream is drained with nothing left behind (tests/support/queue_judge.h:
  // every consumer answers with nothing pending or unacked, and the stream holds nothing
  // besides); on timeout WARNs the judgement, the state and the services' log tails.
  bool WaitDrained(const std::string& stream, int timeout_ms);

  // After a drain: waits until the replayer holds and sends nothing and Umami's row count has
  // not moved for 3 s. A drained stream is not enough: a redelivered copy of a message acked
  // meanwhile may still be held and sent.
  bool WaitSettled(int timeout_ms);

  // Umami: web events are checked by their id, which each test event carries as its URL path
  // ("/<id>"; Umami gives a stored event an id of its own).
  int64_t StoredEvents(const std::string& id_prefix = "");
  std::vector<std::string> MissingEvents(const std::vector<std::string>& ids);
  int64_t DuplicateEvents();  // rows beyond the first of any event
  // PostgreSQL metrics: batches by batch id (= Nats-Msg-Id), at most one row each (primary key).
  int64_t StoredBatches();
  int64_t StoredPoints();
  std::vector<std::string> MissingBatches(const std::vector<std::string>& ids);
  testsupport::Ledger Stores() const;

  // The tails of the services' logs and the NATS nodes' logs, for failure messages.
  std::string Logs() const;
  // For a failure's report: the services' key gauges and counters (a line each), each NATS
  // node's routes and the nodes leading the streams and buckets the services use.
  std::string ServiceState();

  testsupport::TestStack stack;
  std::unique_ptr<common::NatsClient> client;  // the test's own connection (every node)
  std::vector<std::string> sites;
  Service replayer;
  Service writer;
};

// Publishes web events (ids "<prefix>-<i>", 100 visitors over the sites) and OTLP metric
// batches (tenant t1, batch ids "<prefix>-b<i>", `points` points each) from its own thread,
// spread evenly over `seconds`, each one until the stream acks it (same Nats-Msg-Id on every
// try, 60 s at most per message).
class Load {
 public:
  struct Plan {
    std::string prefix;
    int events = 0;
    int batches = 0;
    double seconds = 0;
    int points = 3;
  };
  Load(common::NatsClient& client, std::vector<std::string> sites, Plan plan);
  ~Load();  // joins
  Load(const Load&) = delete;
  Load& operator=(const Load&) = delete;

  void Join();
  // Valid after Join().
  const std::vector<std::string>& event_ids() const { return event_ids_; }
  const std::vector<std::string>& batch_ids() const { return batch_ids_; }
  const std::vector<std::string>& failures() const { return failures_; }
  // The ids of those publishes (JetStream never acknowledged them), for the ledger.
  const std::set<std::string>& unacknowledged_ids() const { return unacknowledged_ids_; }
  int retried() const { return retried_; }            // messages that took more than one try
  int64_t longest_ms() const { return longest_ms_; }  // the longest publish, tries included
  int published() const { return published_.load(); }

 private:
  void Run();
  common::NatsClient& client_;
  std::vector<std::string> sites_;
  Plan plan_;
  std::vector<std::string> event_ids_;
  std::vector<std::string> batch_ids_;
  std::vector<std::string> failures_;
  std::set<std::string> unacknowledged_ids_;
  int retried_ = 0;
  int64_t longest_ms_ = 0;
  std::atomic<int> published_{0};
  std::thread thread_;
};

}  // namespace cluster_test
