// The partition tests' world (docs/operations.md, "Network partitions"): three nats-server
// nodes (n1..n3), two replayers (r1, r2) and two metricswriters (w1, w2), each in a network
// namespace of its own (tests/partition/net.h), and a real PostgreSQL and Umami 2.10 in the host's
// namespace (scripts/stack), reached from the namespaces at 10.77.N.1. Between the replayers and
// Umami sits a recording proxy, and PostgreSQL records each batch row's inserting address, so a
// test can tell which instance sent what and when (the lease's overlap, docs/contract.md §1).
//
// Ownership: the fixture owns the network, the stack, the processes and the threads of its
// DrainWatches. Thread-safety: the test's main thread only, except DrainWatch (its own thread).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/nats_client.h"
#include "tests/partition/net.h"
#include "tests/support/ledger.h"
#include "tests/support/recording_proxy.h"
#include "tests/support/test_stack.h"

namespace partition_test {

int64_t WallNs();

// Samples a work-queue stream every 250 ms on its own thread: how many messages have left it
// (last sequence - messages held) and how many it holds, to tell how long draining stopped.
class DrainWatch {
 public:
  DrainWatch(std::unique_ptr<common::NatsClient> client, std::string stream);
  ~DrainWatch();  // stops and joins
  DrainWatch(const DrainWatch&) = delete;
  DrainWatch& operator=(const DrainWatch&) = delete;

  struct Stall {
    double seconds = 0;  // the longest time without a message leaving while some waited
    double began_s = 0;  // when it began, seconds after `from_ns`
  };
  // Over the samples that end after from_ns.
  Stall LongestStall(int64_t from_ns) const;

 private:
  struct Sample {
    int64_t at_ns;
    uint64_t left;
    uint64_t held;
  };
  std::unique_ptr<common::NatsClient> client_;
  std::string stream_;
  mutable std::mutex mu_;
  std::vector<Sample> samples_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Who sent (a replayer to Umami) or inserted (a metricswriter's batch row) and when.
struct Act {
  std::string who;  // the instance's host name
  int64_t start_ns = 0;
  int64_t end_ns = 0;  // == start_ns where only the moment is known
};

// Leadership as the stores saw it: consecutive acts by different instances are a handover.
struct Handovers {
  int count = 0;
  double shortest_gap_s = -1;  // new leader's first act - old leader's last act started; -1: none
  int close = 0;               // handovers closer than 1 s: both instances acting at once
  int under_way = 0;           // old leader's acts still unanswered as the new one began
  std::string Describe() const;
};
Handovers CountHandovers(std::vector<Act> acts, int64_t from_ns = 0);

// One instance's leadership term, from its log: from "leads: took the <key> lease" to the first
// of "lost the <key> lease", the engine's "the lease is lost", "stopping", or the first line of a
// new process (the old one was killed); end_ns 0 while it lasts.
struct Term {
  std::string who;
  int64_t begin_ns = 0;
  int64_t end_ns = 0;
};
// Whether a term began before the one before it had ended: the lease's promise (docs/contract.md
// §1) is that the old leader stops starting work before the new one takes the lease.
struct TermCheck {
  int handovers = 0;
  int overlaps = 0;
  double shortest_gap_s = -1;  // new term's begin - old term's end
  std::string Describe() const;
};
TermCheck CheckTerms(std::vector<Term> terms, int64_t from_ns = 0);

class PartitionFixture {
 public:
  // Null with *why set where namespaces cannot be made (not root, no ip/iptables).
  static std::unique_ptr<PartitionFixture> Make(std::string* why);
  ~PartitionFixture();

  Net& net() { return *net_; }
  testsupport::TestStack& stack() { return *stack_; }

  // NATS node j = host "n<j>", 1..3.
  static std::string NodeHost(int j) { return "n" + std::to_string(j); }
  std::string NodeUrls(const std::vector<int>& nodes) const;
  std::unique_ptr<common::NatsClient> Connect(const std::vector<int>& nodes,
                                              const std::string& name);
  void StartNode(int j);
  void KillNode(int j);
  std::vector<std::string> MonitorUrls() const;
  // The process of node j / of a service (for /proc readings); -1 when it is not running.
  pid_t NodePid(int j);
  pid_t ServicePid(const std::string& host);

  // Services by host: r1, r2 (replayers), w1, w2 (metricswriters).
  void StartService(const std::string& host);
  void KillService(const std::string& host);
  bool Running(const std::string& host);
  double Metric(const std::string& host, const std::string& name, const std::string& labels = "");
  std::string ScrapeService(const std::string& host);
  // The instance whose *_leader gauge is 1 ("r" or "w"); waits up to timeout_ms; "" for none.
  std::string Leader(char kind, int timeout_ms);
  // Each service's leader and NATS-connected gauges and /healthz status, on one line.
  std::string OperatorView();
  // The NATS node (1..3) the instance's main connection is on; 0 when none.
  int NodeOf(const std::string& host);

  // The replayers' sends to Umami and the metricswriters' batch inserts, by instance.
  std::vector<Act> Sends() const;
  std::vector<Act> Inserts() const;
  // The leadership terms of the replayers ('r') or the metricswriters ('w'), from their logs.
  std::vector<Term> Terms(char kind) const;
  // The moments a service logged a line holding `needle` (e.g. its move to another NATS
  // server), by instance, from every service's log.
  std::vector<Act> Logged(const std::string& needle) const;
  // Sends Umami answered 2xx to `host` between the two moments (duplicate bound of a cut).
  int AnsweredSends(const std::string& host, int64_t from_ns, int64_t to_ns) const;

  // The replayers are idle and Umami's row count has not moved for 3 s.
  bool WaitSettled(int timeout_ms);
  // The stream's consumers (all answering) have nothing pending or unacked. What the stream
  // still holds then was acked and not removed by JetStream (nats-server 2.9.10 left such
  // messages behind after a node's isolation, docs/operations.md): Held() tells how many, the
  // ledger whether they were stored.
  bool Drained(common::NatsClient& client, const std::string& stream);
  bool WaitDrained(common::NatsClient& client, const std::string& stream, int timeout_ms);
  uint64_t Held(common::NatsClient& client, const std::string& stream);

  testsupport::Ledger ledger() const;
  std::vector<std::string> sites;
  // For failure reports: the rules in force, the services' key gauges, log tails.
  std::string Report();

 private:
  PartitionFixture() = default;
  std::string RootUrl(const std::string& url) const;  // 127.0.0.1 -> 10.77.N.1
  std::unique_ptr<Net> net_;
  std::unique_ptr<testsupport::TestStack> stack_;
  std::unique_ptr<testsupport::RecordingProxy> proxy_;
  std::map<int, std::unique_ptr<testsupport::ChildProcess>> nodes_;
  std::map<std::string, std::unique_ptr<testsupport::ChildProcess>> services_;
  std::string nats_server_;
};

}  // namespace partition_test
