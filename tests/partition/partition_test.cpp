// Network partitions (issue 25): each scenario publishes ~2,000 web events and ~200 metric
// batches across a fault made by iptables rules between network namespaces, heals it, drains,
// and prints what happened to every message. Lost and dead-lettered must be 0, duplicates within
// the bound of docs/contract.md §4 (a send Umami answered while its sender could not record it),
// and no two instances may act at once beyond the lease's stated overlap (§1: a send already
// under way). docs/operations.md, "Network partitions", says what each fault does.
#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <thread>

#include "platformctl/nats_admin.h"
#include "tests/cluster/cluster_fixture.h"
#include "tests/partition/partition_fixture.h"
#include "tests/support/nats_cluster.h"
#include "tests/support/test_stack.h"

using partition_test::PartitionFixture;
using partition_test::WallNs;

namespace {

constexpr int kEvents = 2000;
constexpr int kBatches = 200;
constexpr int kPoints = 3;

// Where namespaces cannot be made the test says why and exits with 77, which CTest reports as
// skipped (SKIP_RETURN_CODE), never as passed.
std::unique_ptr<PartitionFixture> MakeOrSkip() {
  std::string why;
  auto f = PartitionFixture::Make(&why);
  if (!f) {
    std::printf("SKIPPED: %s\n", why.c_str());
    std::fflush(stdout);
    std::exit(77);
  }
  return f;
}

std::vector<int> AllBut(int node) {
  std::vector<int> out;
  for (int j = 1; j <= 3; ++j) {
    if (j != node) out.push_back(j);
  }
  return out;
}

const std::vector<testsupport::RaftAsset> kAssets = {
    {"WEB_EVENTS", ""},    {"WEB_EVENTS", "replayer"},
    {"API_METRICS", ""},   {"API_METRICS", "metricswriter"},
    {"KV_locks", ""},      {"KV_replayer_stored", ""},
    {"KV_visit_state", ""}};

struct Scenario {
  Scenario(std::string n, std::string p) : name(std::move(n)), prefix(std::move(p)) {}
  std::string name;
  std::string prefix;
  std::vector<int> client_nodes = {1, 2, 3};  // the test's own publisher and watchers
  double fault_s = 40;
  std::function<void()> fault;
  std::function<void()> heal;
  std::string faulted;  // the instance the fault is aimed at (duplicate bound)
  // Neither stream's longest stall may span the heal: draining resumed while the fault was on.
  bool resumes_before_heal = false;
  // Checks of the scenario's own, after the common ones (the fault's start and the heal).
  std::function<void(int64_t fault_ns, int64_t heal_ns)> then;
};

void Run(PartitionFixture& f, const Scenario& s) {
  auto publisher = f.Connect(s.client_nodes, "partition-load");
  auto observer = f.Connect(s.client_nodes, "partition-observer");
  partition_test::DrainWatch web(f.Connect(s.client_nodes, "partition-watch"), "WEB_EVENTS");
  partition_test::DrainWatch api(f.Connect(s.client_nodes, "partition-watch"), "API_METRICS");
  const uint64_t web_dlq_before = f.Held(*observer, "WEB_DLQ");
  const uint64_t api_dlq_before = f.Held(*observer, "API_DLQ");
  const int64_t dups_before = f.ledger().DuplicateEvents();
  const int64_t points_before = f.ledger().StoredPoints();
  // A web event is stored twice only when a replayer sends it twice: a redelivery, or a send
  // again after one that failed (a timeout whose answer was lost). Both are counted.
  auto second_sends = [&] {
    double n = 0;
    for (const char* r : {"r1", "r2"}) {
      n += f.Metric(r, "replayer_redeliveries_received_total") +
           f.Metric(r, "replayer_send_failures_total");
    }
    return static_cast<int64_t>(n);
  };
  const int64_t second_sends_before = second_sends();

  cluster_test::Load load(*publisher, f.sites,
                          {s.prefix, kEvents, kBatches, s.fault_s + 20, kPoints});
  // The fault comes while both services are at work: once their work shows in the stores (a
  // sixth of the load: about 10 s of it on a quiet machine).
  REQUIRE(testsupport::WaitFor(
      [&] {
        return f.ledger().StoredEvents(s.prefix + "-") >= kEvents / 6 &&
               f.ledger().StoredPoints() >= points_before + kBatches / 6 * kPoints;
      },
      60'000));
  const int64_t fault_ns = WallNs();
  s.fault();
  // Halfway through: what an operator sees of the instance the fault is aimed at.
  const auto half = std::chrono::milliseconds(static_cast<int64_t>(s.fault_s * 500));
  std::this_thread::sleep_for(half);
  const std::string seen = f.OperatorView();
  std::this_thread::sleep_for(half);
  // The heal takes a while on a loaded machine (2.85 s once: rules removed one by one): a stall
  // that begins while it is under way is the heal's, not the fault's.
  const int64_t heal_begin_ns = WallNs();
  s.heal();
  const int64_t heal_ns = WallNs();
  load.Join();
  const int64_t published_ns = WallNs();
  const bool web_drained = f.WaitDrained(*observer, "WEB_EVENTS", 300'000);
  const bool api_drained = f.WaitDrained(*observer, "API_METRICS", 300'000);
  const bool settled = f.WaitSettled(120'000);
  const double drain_s = static_cast<double>(WallNs() - published_ns) / 1e9;

  auto ledger = f.ledger();
  const auto missing_events = ledger.MissingEvents(load.event_ids());
  const auto missing_batches = ledger.MissingBatches(load.batch_ids());
  const int64_t web_dlq = static_cast<int64_t>(f.Held(*observer, "WEB_DLQ") - web_dlq_before);
  const int64_t api_dlq = static_cast<int64_t>(f.Held(*observer, "API_DLQ") - api_dlq_before);
  const int64_t dups = ledger.DuplicateEvents() - dups_before;
  const int64_t batches_stored =
      static_cast<int64_t>(load.batch_ids().size() - missing_batches.size());
  const int64_t points = ledger.StoredPoints() - points_before;
  // The fault aimed at a replayer: the sends Umami answered to it around the fault (its counters
  // may not survive the fault). Any other: the replayers' second sends, none on a quiet
  // machine; under load an ack wait can run out, or a send time out, in any scenario.
  const bool at_replayer = !s.faulted.empty() && s.faulted[0] == 'r';
  const int bound =
      at_replayer ? f.AnsweredSends(s.faulted, fault_ns - 5'000'000'000, heal_ns)
                  : static_cast<int>(std::max<int64_t>(0, second_sends() - second_sends_before));
  const std::string bound_is = at_replayer
                                   ? "sends Umami answered to " + s.faulted + " around the fault"
                                   : "the replayers' redeliveries and sends again after a failure";
  const auto sends = partition_test::CountHandovers(f.Sends(), fault_ns - 60'000'000'000);
  const auto inserts = partition_test::CountHandovers(f.Inserts(), fault_ns - 60'000'000'000);
  const auto rterms = partition_test::CheckTerms(f.Terms('r'));
  const auto wterms = partition_test::CheckTerms(f.Terms('w'));
  // Drained: what the streams still hold was acked and not removed. nats-server 2.9.10 left such
  // messages behind after a node's isolation; the supported servers (2.10.27 and later) have
  // not, so here one is a failure, as in the cluster tests (docs/operations.md).
  const uint64_t web_left = f.Held(*observer, "WEB_EVENTS");
  const uint64_t api_left = f.Held(*observer, "API_METRICS");
  const auto web_stall = web.LongestStall(fault_ns);
  const auto api_stall = api.LongestStall(fault_ns);

  char text[4096];
  std::snprintf(
      text, sizeof text,
      "partition %s\n"
      "  web events:     published %zu, stored %zu distinct, duplicates %lld (bound %d: %s), "
      "lost %zu, dead-lettered %lld\n"
      "  metric batches: published %zu, stored %lld, points %lld of %lld, lost %zu, "
      "dead-lettered %lld\n"
      "  draining stopped for at most %.1f s (web, from %.1f s after the fault began) and %.1f "
      "s (metrics, from %.1f s); all stored %.1f s after the last publish\n"
      "  replayer lease terms (logs): %s; sends seen by Umami: %s\n"
      "  metricswriter lease terms (logs): %s; batch rows: %s\n"
      "  halfway through the fault: %s\n"
      "  publishes retried: %d, longest publish %lld ms\n"
      "  held in the streams after every ack (acked, not removed by JetStream): web %llu, "
      "metrics %llu\n",
      s.name.c_str(), load.event_ids().size(), load.event_ids().size() - missing_events.size(),
      static_cast<long long>(dups), bound, bound_is.c_str(),
      missing_events.size() > static_cast<size_t>(web_dlq) ? missing_events.size() - web_dlq : 0,
      static_cast<long long>(web_dlq), load.batch_ids().size(),
      static_cast<long long>(batches_stored), static_cast<long long>(points),
      static_cast<long long>(batches_stored * kPoints),
      missing_batches.size() > static_cast<size_t>(api_dlq) ? missing_batches.size() - api_dlq : 0,
      static_cast<long long>(api_dlq), web_stall.seconds, web_stall.began_s, api_stall.seconds,
      api_stall.began_s, drain_s, rterms.Describe().c_str(), sends.Describe().c_str(),
      wterms.Describe().c_str(), inserts.Describe().c_str(), seen.c_str(), load.retried(),
      static_cast<long long>(load.longest_ms()), static_cast<unsigned long long>(web_left),
      static_cast<unsigned long long>(api_left));
  std::fputs(text, stdout);
  std::fflush(stdout);
  // CTest shows a passing test's output to nobody: scripts/test prints this file after the run.
  std::ofstream(testsupport::BinaryDir() + "/partition-figures.txt", std::ios::app) << text;

  INFO(f.Report());
  CHECK(load.failures().empty());
  CHECK(web_drained);
  CHECK(api_drained);
  CHECK(settled);
  CHECK(missing_events.empty());
  CHECK(missing_batches.empty());
  CHECK(web_dlq == 0);
  CHECK(api_dlq == 0);
  CHECK(dups <= bound);
  CHECK(points == batches_stored * kPoints);
  CHECK(web_left == 0);
  CHECK(api_left == 0);
  // The lease's promise; what Umami and PostgreSQL saw is printed above (a send under way, or
  // delayed on a lossy link, may arrive after the new leader's first).
  CHECK(rterms.overlaps == 0);
  CHECK(wterms.overlaps == 0);
  if (s.resumes_before_heal) {
    const double heal_s = static_cast<double>(heal_begin_ns - fault_ns) / 1e9;
    const double healed_s = static_cast<double>(heal_ns - fault_ns) / 1e9;
    for (const auto& stall : {web_stall, api_stall}) {
      INFO("a stall of " << stall.seconds << " s from " << stall.began_s
                         << " s after the fault began; the heal began at " << heal_s
                         << " s and ended at " << healed_s << " s");
      CHECK((stall.began_s >= heal_s || stall.began_s + stall.seconds < heal_s));
    }
  }
  if (s.then) s.then(fault_ns, heal_ns);
}

std::string LeaderOrFail(PartitionFixture& f, char kind) {
  std::string leader = f.Leader(kind, 60'000);
  if (leader.empty())
    FAIL("no " << (kind == 'r' ? "replayer" : "metricswriter") << " leads\n" << f.Report());
  return leader;
}

int NodeOrFail(PartitionFixture& f, const std::string& host) {
  int node = 0;
  testsupport::WaitFor([&] { return (node = f.NodeOf(host)) != 0; }, 20'000);
  if (node == 0) FAIL(host << " is connected to no NATS node\n" << f.Report());
  return node;
}

// Restarts `host` (SIGKILL, then a new process) until its connection is on NATS node `node`:
// nats.c picks a server at random, so a third of the starts land there; 40 tries miss with a
// chance of 1 in 10^7. The services are placed before the load starts.
void PlaceOn(PartitionFixture& f, const std::string& host, int node) {
  for (int i = 0; i < 40; ++i) {
    int now = 0;
    testsupport::WaitFor([&] { return (now = f.NodeOf(host)) != 0; }, 20'000);
    if (now == node) return;
    f.KillService(host);
    f.StartService(host);
  }
  FAIL(host << " never connected to nats-" << node << " in 40 starts\n" << f.Report());
}

}  // namespace

TEST_CASE("partition (a): the leading replayer's node cut from every NATS node for 40 s",
          "[partition]") {
  auto f = MakeOrSkip();
  const std::string leader = LeaderOrFail(*f, 'r');
  Scenario s{"(a) " + leader + " cut from n1, n2, n3 for 40 s", "pa"};
  s.faulted = leader;
  s.fault = [&] {
    for (int j = 1; j <= 3; ++j) f->net().Cut(leader, PartitionFixture::NodeHost(j));
  };
  s.heal = [&] { f->net().HealAll(); };
  Run(*f, s);
}

TEST_CASE(
    "partition (b): the leading replayer cut only from the node leading its stream and buckets",
    "[partition]") {
  auto f = MakeOrSkip();
  const std::string leader = LeaderOrFail(*f, 'r');
  const int node = NodeOrFail(*f, leader);
  auto admin = f->Connect({1, 2, 3}, "partition-admin");
  // The stream, its consumer and the buckets all led by the node the leader is connected to:
  // the cut takes both its connection and the leaders it talks to.
  auto left = testsupport::GatherLeadership(*admin, node, kAssets, 60'000);
  for (const auto& a : left) WARN(a.Name() << " could not be moved to nats-" << node);
  Scenario s{"(b) " + leader + " cut from n" + std::to_string(node) +
                 " (its connection, leading WEB_EVENTS and the buckets) for 40 s",
             "pb"};
  s.faulted = leader;
  s.fault = [&] { f->net().Cut(leader, PartitionFixture::NodeHost(node)); };
  s.heal = [&] { f->net().HealAll(); };
  Run(*f, s);
}

TEST_CASE("partition (c): a minority NATS node isolated while the services are connected to it",
          "[partition]") {
  auto f = MakeOrSkip();
  const std::string leader = LeaderOrFail(*f, 'r');
  const int node = NodeOrFail(*f, leader);
  const std::vector<int> majority = AllBut(node);
  auto admin = f->Connect(majority, "partition-admin");
  auto left = testsupport::GatherLeadership(*admin, majority[0], kAssets, 60'000);
  for (const auto& a : left) WARN(a.Name() << " could not be moved to nats-" << majority[0]);
  Scenario s{"(c) n" + std::to_string(node) + " (" + leader +
                 "'s node) isolated from the other NATS nodes for 40 s",
             "pc"};
  s.client_nodes = majority;
  s.faulted = leader;
  s.fault = [&] {
    for (int j : majority) {
      f->net().Cut(PartitionFixture::NodeHost(node), PartitionFixture::NodeHost(j));
    }
  };
  s.heal = [&] { f->net().HealAll(); };
  Run(*f, s);
}

TEST_CASE("partition (d): 30 % loss and 200 ms delay on the leading replayer's link for 60 s",
          "[partition]") {
  auto f = MakeOrSkip();
  const std::string leader = LeaderOrFail(*f, 'r');
  Scenario s{"(d) " + leader + "'s link: 30 % loss, 200 ms delay for 60 s", "pd"};
  s.fault_s = 60;
  s.faulted = leader;
  s.fault = [&] { f->net().Degrade(leader, 0.30, 200); };
  s.heal = [&] { f->net().HealAll(); };
  Run(*f, s);
}

TEST_CASE("partition (e): 30 % loss and 200 ms delay on the leading metricswriter's link for 60 s",
          "[partition]") {
  auto f = MakeOrSkip();
  const std::string leader = LeaderOrFail(*f, 'w');
  Scenario s{"(e) " + leader + "'s link: 30 % loss, 200 ms delay for 60 s", "pe"};
  s.fault_s = 60;
  s.faulted = leader;
  s.fault = [&] { f->net().Degrade(leader, 0.30, 200); };
  s.heal = [&] { f->net().HealAll(); };
  Run(*f, s);
}

// Both instances of each pair on the node that is cut off: before, nothing drained until the
// heal (docs/operations.md, "Network partitions"). Now each notices that JetStream behind its
// connection answers nothing for a lease TTL (15 s here) and connects to another server
// (common/js_reach.h): draining resumes within about two TTLs while the node is still cut off.
TEST_CASE("partition (f): a minority NATS node isolated for 60 s with both pairs connected to it",
          "[partition]") {
  auto f = MakeOrSkip();
  const std::string leader = LeaderOrFail(*f, 'r');
  const int node = NodeOrFail(*f, leader);
  for (const char* host : {"r1", "r2", "w1", "w2"}) PlaceOn(*f, host, node);
  LeaderOrFail(*f, 'r');
  LeaderOrFail(*f, 'w');
  const std::vector<int> majority = AllBut(node);
  auto admin = f->Connect(majority, "partition-admin");
  auto left = testsupport::GatherLeadership(*admin, majority[0], kAssets, 60'000);
  for (const auto& a : left) WARN(a.Name() << " could not be moved to nats-" << majority[0]);
  Scenario s{"(f) n" + std::to_string(node) +
                 " isolated from the other NATS nodes for 60 s, r1, r2, w1 and w2 all connected "
                 "to it",
             "pf"};
  s.client_nodes = majority;
  s.faulted = f->Leader('r', 1000);
  s.fault_s = 60;
  // Draining resumes while the node is still cut off. Not a bound yet: two lease TTLs (one to
  // notice, one for the old lease to run out) and 5 s for the first fetch would be 35 s, met on
  // 2.9.10 (11-17 s); on 2.15.1 with the production configuration 33.4-45.0 s in three runs on
  // a loaded machine: the new leader reads the old one's held events, redelivered, under
  // the crash-loop guard one at a time (three KV round trips each, writes synced to disk), and
  // some of its KV reads are lost on a route to the cut-off node that a majority node keeps
  // for up to a minute (docs/operations.md). Before the guard rested after a failure, every
  // lost read cost a request timeout on that one thread and draining waited for the heal.
  s.resumes_before_heal = true;
  s.fault = [&] {
    for (int j : majority) {
      f->net().Cut(PartitionFixture::NodeHost(node), PartitionFixture::NodeHost(j));
    }
  };
  s.heal = [&] { f->net().HealAll(); };
  // Every instance left the cut-off node once, while it was cut off, after one TTL of
  // unanswered lease requests (two at most: a renewal's own timeout comes first), and none
  // went back (the heal does not move a connection).
  s.then = [&](int64_t fault_ns, int64_t heal_ns) {
    const auto moves = f->Logged("connecting to another server");
    std::string seen;
    std::map<std::string, int> count;
    for (const auto& m : moves) {
      if (m.start_ns < fault_ns) continue;
      char at[64];
      std::snprintf(at, sizeof at, "%s%s at %.1f s", seen.empty() ? "" : ", ", m.who.c_str(),
                    static_cast<double>(m.start_ns - fault_ns) / 1e9);
      seen += at;
      ++count[m.who];
      CHECK(m.start_ns >= fault_ns + 14'000'000'000);
      CHECK(m.start_ns <= std::min(heal_ns, fault_ns + 30'000'000'000));
    }
    const std::string line = "  moved to another NATS server (after the fault began): " +
                             (seen.empty() ? "none" : seen) + "\n";
    std::fputs(line.c_str(), stdout);
    std::fflush(stdout);
    std::ofstream(testsupport::BinaryDir() + "/partition-figures.txt", std::ios::app) << line;
    for (const char* host : {"r1", "r2", "w1", "w2"}) {
      CHECK(count[host] == 1);
      CHECK(f->NodeOf(host) != node);
    }
  };
  Run(*f, s);
}
