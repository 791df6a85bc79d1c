// platformctl during an incident (issue 14 §5): on a three-node cluster with one node killed or
// paused (SIGSTOP) - the node leading WEB_DLQ, so every command meets an election - `streams`,
// `leaders`, `dlq list|replay|purge` and `erase` work, leave no consumer behind, and the runs
// after the node is back are unaffected. With two nodes down they give up with a clear message.
#include <catch2/catch.hpp>

#include <set>

#include <nlohmann/json.hpp>

#include "tests/cluster/ctl_cluster.h"

using ctlcluster::Cluster;
using ctlcluster::Run;
using dlqtest::Seed;

namespace {

// 3 sites x 20 web dead letters (visitors v0..v3) and 10 of tenant t1.
void SeedDlqs(common::NatsClient& client) {
  std::vector<common::OutMessage> msgs;
  for (int i = 0; i < 60; ++i) {
    Seed s;
    s.key = std::string("site-") + "abc"[i % 3];
    s.visitor = "v" + std::to_string(i % 4);
    s.reason = i % 2 ? "umami failed this event 4 times" : "no usable visitor key";
    s.origin_seq = static_cast<uint64_t>(1000 + i);
    s.msg_id = "ev-" + std::to_string(i);
    msgs.push_back(dlqtest::DeadLetter(s));
  }
  for (int i = 0; i < 10; ++i) {
    Seed s;
    s.web = false;
    s.key = "t1";
    s.reason = "cannot decode";
    s.origin_seq = static_cast<uint64_t>(2000 + i);
    s.msg_id = "batch-" + std::to_string(i);
    msgs.push_back(dlqtest::DeadLetter(s));
  }
  dlqtest::PublishAll(client, msgs);
}

// No consumer on either DLQ: the one each walk creates is deleted when the walk ends. A delete
// the cluster did not answer (e.g. just after a node came back) is said on stderr; only then
// may the consumer stay, until the server removes it 30 s after the walk.
void NoConsumers(Cluster& c, common::NatsClient& client, const std::string& after,
                 std::string& stderr_since) {
  INFO("after " << after << "; stderr since the last check:\n" << stderr_since);
  const bool said_left = stderr_since.find("until the server removes it") != std::string::npos;
  stderr_since.clear();
  auto none = [&] {
    return c.Consumers(client, "WEB_DLQ").empty() && c.Consumers(client, "API_DLQ").empty();
  };
  if (said_left) {
    CHECK(testsupport::WaitFor(none, 40'000));
  } else {
    CHECK(c.Consumers(client, "WEB_DLQ").empty());
    CHECK(c.Consumers(client, "API_DLQ").empty());
  }
}

// Every command, with node `down` down (0: none). While a node is down, purge and erase do their
// work on the stream but must name the replica that did not erase; they exit 1 either way, the
// raft logs not being waited for.
void EveryCommand(Cluster& c, common::NatsClient& client, const std::string& round, int down,
                  const std::string& purge_key, const std::string& erase_visitor) {
  const bool all_up = down == 0;
  const std::string victim = "nats-" + std::to_string(down);
  std::vector<std::pair<std::string, double>> times;
  std::string err;  // every command's stderr since the last NoConsumers
  auto ctl = [&](const std::string& args) {
    Run r = c.Ctl(args);
    times.emplace_back(args, r.seconds);
    err += r.err;
    return r;
  };

  Run r = ctl("streams --interval 0");
  INFO(round << ": streams: " << r.Show());
  CHECK(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("WEB_DLQ"));
  CHECK_THAT(r.out, !Catch::Contains("OFFLINE"));
  r = ctl("streams --interval 0 --json --stream WEB_DLQ --stream API_DLQ");
  INFO(round << ": streams --json: " << r.Show());
  REQUIRE(r.rc == 0);
  auto doc = nlohmann::json::parse(r.out);
  REQUIRE(doc["streams"].size() == 2);
  CHECK(doc["streams"][0]["consumers"].empty());

  r = ctl("leaders");
  INFO(round << ": leaders: " << r.Show());
  CHECK(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("replayer"));

  r = ctl("dlq list --queue web --summary --json");
  INFO(round << ": list: " << r.Show());
  REQUIRE(r.rc == 0);
  const uint64_t web_before = nlohmann::json::parse(r.out)["count"].get<uint64_t>();
  CHECK(web_before > 0);
  r = ctl("dlq list --queue web --key site-a --json");
  INFO(round << ": list --key: " << r.Show());
  CHECK(r.rc == 0);
  NoConsumers(c, client, round + " list", err);

  r = ctl("dlq replay --queue web --key site-a --reason visitor --json");
  INFO(round << ": replay: " << r.Show());
  CHECK(r.rc == 0);
  doc = nlohmann::json::parse(r.out);
  CHECK(doc["failed"] == 0);
  NoConsumers(c, client, round + " replay", err);

  // --raft-wait 0: the raft logs are not waited for (ctl_erasure_test does that), so they are
  // reported as still holding the erased messages, exit 1 even with every node up.
  r = ctl("dlq purge --queue web --key " + purge_key + " --yes --raft-wait 0");
  INFO(round << ": purge: " << r.Show());
  CHECK_THAT(r.out, Catch::Contains("failed: 0"));
  CHECK(r.rc == 1);
  if (all_up) {
    CHECK_THAT(r.out, !Catch::Contains("NOT ERASED"));
    CHECK_THAT(r.out, Catch::Contains("(a raft log may still hold them)"));
  } else {
    // done on the stream; not on every copy
    CHECK_THAT(r.out, Catch::Contains(victim + ": "));
    CHECK_THAT(r.out, Catch::Contains("NOT ERASED"));
    CHECK_THAT(r.out, Catch::Contains("(not every replica erased them)"));
  }
  NoConsumers(c, client, round + " purge", err);

  r = ctl("erase --site site-c --visitor " + erase_visitor + " --json --raft-wait 0");
  INFO(round << ": erase --site: " << r.Show());
  doc = nlohmann::json::parse(r.out);
  CHECK(doc["failed"] == 0);
  CHECK(doc["erased"].get<int>() > 0);
  CHECK(r.rc == 1);
  CHECK(doc["erasure"]["replicas_ok"] == all_up);
  CHECK(doc["erasure"]["raft_logs_ok"] == false);
  r = ctl("erase --tenant t1 --json --raft-wait 0");
  INFO(round << ": erase --tenant: " << r.Show());
  doc = nlohmann::json::parse(r.out);
  // The first round erased t1's batches: nothing is left to erase, nothing is pending.
  const bool erased = doc["erased"].get<int>() > 0;
  CHECK(r.rc == (erased ? 1 : 0));
  CHECK(doc["erasure"]["replicas_ok"] == (all_up || !erased));
  NoConsumers(c, client, round + " erase", err);

  std::string line;
  for (const auto& [args, s] : times) line += "\n  " + args + ": " + std::to_string(s) + " s";
  WARN(round << ": command durations" << line);
}

}  // namespace

TEST_CASE(
    "platformctl with a node killed: every command works, no consumer is left, the next "
    "run is unaffected, two nodes down fail clearly",
    "[cluster]") {
  Cluster c;
  auto client = c.Connect();
  SeedDlqs(*client);
  const int victim = c.LeaderOf(*client, "WEB_DLQ");
  REQUIRE(victim != 0);
  c.stack.Kill(c.stack.NatsNode(victim));
  auto others = c.Connect(victim);
  EveryCommand(c, *others, "nats-" + std::to_string(victim) + " killed", victim, "site-b", "v1");

  c.stack.Start(c.stack.NatsNode(victim));  // waits for its /healthz
  client = c.Connect();
  REQUIRE(c.WaitAllCurrent(*client, {"WEB_DLQ", "API_DLQ", "KV_locks"}));
  EveryCommand(c, *client, "all back", 0, "site-a", "v3");

  // Two of three down: no stream leader can be elected. The command waits out the cluster
  // patience and says what did not answer.
  const int second = victim == 1 ? 2 : 1;
  c.stack.Kill(c.stack.NatsNode(victim));
  c.stack.Kill(c.stack.NatsNode(second));
  // The survivor keeps answering as leader until it notices it lost its quorum.
  int third = 6 - victim - second;
  auto last = c.Connect(0);
  REQUIRE(testsupport::WaitFor([&] { return c.LeaderOf(*last, "WEB_DLQ") == 0; }, 60'000));
  INFO("only nats-" << third << " is up");
  Run r = c.Ctl("dlq list --queue web --summary");
  INFO(r.Show());
  CHECK(r.rc == 3);
  CHECK_THAT(r.err, Catch::Contains("gave up after 30 s"));
  CHECK(r.seconds < 75);
  r = c.Ctl("streams --interval 0");
  INFO(r.Show());
  CHECK(r.rc == 3);
  CHECK_THAT(r.err, Catch::Contains("gave up after"));
}

TEST_CASE(
    "platformctl with a node paused (SIGSTOP): every command works, no consumer is left, "
    "the next run is unaffected",
    "[cluster]") {
  Cluster c;
  auto client = c.Connect();
  SeedDlqs(*client);
  const int victim = c.LeaderOf(*client, "WEB_DLQ");
  REQUIRE(victim != 0);
  c.Pause(victim);
  auto others = c.Connect(victim);
  EveryCommand(c, *others, "nats-" + std::to_string(victim) + " paused", victim, "site-b", "v1");
  c.Resume();
  // Back from the pause: it catches up by itself; the next runs see every replica current.
  client = c.Connect();
  REQUIRE(c.WaitAllCurrent(*client, {"WEB_DLQ", "API_DLQ", "KV_locks"}));
  EveryCommand(c, *client, "resumed", 0, "site-a", "v3");
}
