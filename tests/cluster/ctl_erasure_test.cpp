// Erasure on three replicas (issues 15 §1 and 38 §2): what `dlq purge` reports is checked against
// every node's store directory, stream block files and the `_js_` raft logs alike, with grep, as
// the single-node purge test does. nats-server 2.10.27 and 2.15.1 (NATS_SERVER_BIN), as the
// report describes them (platformctl/erasure_report.h):
// - every current replica overwrites the erased messages in its block files; the raft logs keep
//   them until each replica's next periodic snapshot, which the purge waits for (up to 4
//   minutes), reading every replica's log through raftz: once it returns, no log holds them;
// - an acknowledged work-queue original stays in its stream's block files while the block holds
//   other messages, and goes when the stream becomes empty;
// - a replica that was down during the purge and catches up from a snapshot reports them deleted
//   and keeps their bytes; `dlq rebuild` (peer removed and re-added) clears them on 2.10.27;
//   2.15.1 refuses the peer removal (no other server can take its place), rebuild says so and
//   exits 1, and what it says to do instead (the node stopped, its copy deleted) clears them.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "common/dead_letter.h"
#include "common/nats_stream.h"
#include "tests/cluster/ctl_cluster.h"

using ctlcluster::Cluster;
using ctlcluster::Run;
using dlqtest::Seed;

namespace {

std::string Mark(const std::string& prefix, int i) { return prefix + std::to_string(i) + "-"; }

// An event as the edge publishes it, its marker in the URL.
common::OutMessage Event(const std::string& site, const std::string& id, const std::string& mark) {
  common::OutMessage m;
  m.subject = "web.events." + site;
  m.msg_id = id;
  m.data = R"({"id":")" + id + R"(","website":")" + site +
           R"(","visitor":"v","accepted_at":1764427800123,"type":"event","payload":{"url":"/)" +
           mark + R"("}})";
  return m;
}

// What the replayer does with a poison event: the DLQ copy first, then the ack of the original.
void DeadLetterFrom(common::NatsClient& client, const std::string& site, int n) {
  common::ConsumerSpec spec;
  spec.stream = "WEB_EVENTS";
  spec.durable = "dead-letterer-" + site;
  spec.filter_subject = "web.events." + site;
  auto consumer = common::PullConsumer::Bind(client, spec);
  REQUIRE(consumer.ok());
  int done = 0;
  for (int tries = 0; done < n && tries < 60; ++tries) {
    auto batch = (*consumer)->Fetch(n - done, common::Millis(2000));
    REQUIRE(batch.ok());
    for (auto& m : *batch) {
      common::dead_letter::Origin o{std::string(m.subject()), m.stream(), m.stream_seq(),
                                    std::string(m.data()), m.AllHeaders()};
      auto ack = common::PublishSync(client, common::dead_letter::Build(o, "not valid JSON"));
      INFO((ack ? "" : ack.error().message));
      REQUIRE(ack.ok());
      REQUIRE(m.AckSync().ok());
      ++done;
    }
  }
  REQUIRE(done == n);
}

std::vector<int> Nodes() { return {1, 2, 3}; }

}  // namespace

TEST_CASE("erasure on three current replicas: what the purge report says is what the stores hold",
          "[cluster][erasure]") {
  Cluster c;
  auto client = c.Connect();
  // 20 events of site-p go through WEB_EVENTS to WEB_DLQ (acknowledged originals); 3 of site-h
  // stay queued in WEB_EVENTS; 5 of site-k are dead letters that stay (the control).
  for (int i = 1; i <= 20; ++i) {
    REQUIRE(common::PublishSync(
                *client, Event("site-p", "ev-p" + std::to_string(i), Mark("PURGED-MARK-", i)))
                .ok());
  }
  for (int i = 1; i <= 3; ++i) {
    REQUIRE(common::PublishSync(*client,
                                Event("site-h", "ev-h" + std::to_string(i), Mark("HELD-MARK-", i)))
                .ok());
  }
  DeadLetterFrom(*client, "site-p", 20);
  std::vector<common::OutMessage> kept;
  for (int i = 1; i <= 5; ++i) {
    Seed s;
    s.key = "site-k";
    s.visitor = "v";
    s.reason = "not valid JSON";
    s.origin_seq = static_cast<uint64_t>(100 + i);
    s.marker = Mark("KEPT-MARK-", i);
    kept.push_back(dlqtest::DeadLetter(s));
  }
  dlqtest::PublishAll(*client, kept);
  REQUIRE(c.WaitAllCurrent(*client, {"WEB_DLQ", "WEB_EVENTS"}));
  // Before anything is erased every node holds the bytes (else the checks below prove nothing).
  for (int j : Nodes()) {
    INFO("node " << j);
    REQUIRE(testsupport::WaitFor([&] { return c.OnDisk(j, "PURGED-MARK-7-", "streams/WEB_DLQ"); },
                                 10'000));
    CHECK(c.OnDisk(j, "PURGED-MARK-7-", "_js_"));
    CHECK(c.OnDisk(j, "PURGED-MARK-7-", "streams/WEB_EVENTS"));
  }

  Run r = c.Ctl("dlq purge --queue web --key site-p --yes --json");
  INFO(r.Show());
  REQUIRE(r.rc == 0);
  // The wait for the raft logs (what it printed on stderr: each replica's time).
  WARN("purge, raft logs waited for, in " << r.seconds << " s:\n" << r.err);
  auto doc = nlohmann::json::parse(r.out);
  CHECK(doc["erased"] == 20);
  const auto& e = doc["erasure"];
  CHECK(e["raft"] == true);
  CHECK(e["replicas_ok"] == true);
  CHECK(e["raft_logs_ok"] == true);
  REQUIRE(e["replicas"].size() == 3);
  for (const auto& rep : e["replicas"]) CHECK(rep["erased"] == true);
  REQUIRE(e["raft_logs"].size() == 2);  // WEB_DLQ's, and WEB_EVENTS's for the originals
  for (const auto& log : e["raft_logs"]) {
    CHECK(log["ok"] == true);
    REQUIRE(log["replicas"].size() == 3);
    for (const auto& rep : log["replicas"]) CHECK(rep["state"] == "compacted");
  }
  std::string not_yet, done;
  for (const auto& s : e["not_yet"]) not_yet += s.get<std::string>() + "\n";
  for (const auto& s : e["done"]) done += s.get<std::string>() + "\n";
  CHECK_THAT(done, Catch::Contains("the raft log of WEB_DLQ on every replica was compacted past "
                                   "the erasure"));
  CHECK_THAT(done, Catch::Contains("the raft log of WEB_EVENTS on every replica was compacted"));
  CHECK_THAT(not_yet, !Catch::Contains("raft log"));
  CHECK_THAT(not_yet, Catch::Contains("20 originals in WEB_EVENTS"));
  CHECK_THAT(not_yet, Catch::Contains("WEB_EVENTS holds 3 messages now"));
  const std::string verify = e["verify_command"];
  CHECK_THAT(verify, Catch::Contains("--raft-index "));

  // What it says is done: no block file of WEB_DLQ and no raft log on any node holds a purged
  // payload; the kept ones are there. What it says is not yet true is not: WEB_EVENTS's block
  // files still hold them.
  auto purged_anywhere = [&](int j, const std::string& part) {
    for (int i = 1; i <= 20; ++i) {
      if (c.OnDisk(j, Mark("PURGED-MARK-", i), part)) return i;
    }
    return 0;
  };
  for (int j : Nodes()) {
    INFO("node " << j);
    CHECK(purged_anywhere(j, "streams/WEB_DLQ") == 0);
    CHECK(purged_anywhere(j, "_js_") == 0);
    for (int i = 1; i <= 5; ++i) CHECK(c.OnDisk(j, Mark("KEPT-MARK-", i), "streams/WEB_DLQ"));
    CHECK(c.OnDisk(j, "PURGED-MARK-7-", "streams/WEB_EVENTS"));  // the block holds site-h too
  }
  r = c.Ctl(verify.substr(std::string("platformctl ").size()));
  INFO(r.Show());
  CHECK(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("verified: every replica answered that none of them is "
                                    "stored, and every raft log is compacted past the erasure"));
  // The originals go with their block: acknowledge what else WEB_EVENTS holds and it is empty.
  DeadLetterFrom(*client, "site-h", 3);
  for (int j : Nodes()) {
    INFO("node " << j << " with WEB_EVENTS empty");
    CHECK(testsupport::WaitFor([&] { return purged_anywhere(j, "streams/WEB_EVENTS") == 0; },
                               15'000));
  }
  CHECK_THAT(r.out + r.err + doc.dump(), !Catch::Contains("MARK-"));
}

TEST_CASE(
    "a replica down during a purge: reported, keeps the bytes after a snapshot catch-up, "
    "rebuilt clean",
    "[cluster][erasure]") {
  Cluster c;
  auto client = c.Connect();
  // seq 1..5 and 16..20 stay (site-k), 6..15 are purged (site-q): interior deletes. (A purge of
  // the stream's head would be reclaimed on the lagging node anyway: catching up from a
  // snapshot compacts the store up to the new first sequence, rewriting that block.)
  auto purged = [](int i) { return i >= 6 && i <= 15; };
  std::vector<common::OutMessage> msgs;
  for (int i = 1; i <= 20; ++i) {
    Seed s;
    s.key = purged(i) ? "site-q" : "site-k";
    s.visitor = "v";
    s.reason = "not valid JSON";
    s.origin_seq = static_cast<uint64_t>(i);
    s.marker = Mark(purged(i) ? "DOWN-MARK-" : "KEPT-MARK-", i);
    msgs.push_back(dlqtest::DeadLetter(s));
  }
  dlqtest::PublishAll(*client, msgs);
  REQUIRE(c.WaitAllCurrent(*client, {"WEB_DLQ"}));
  for (int j : Nodes()) {
    REQUIRE(testsupport::WaitFor([&] { return c.OnDisk(j, "DOWN-MARK-9-", "streams/WEB_DLQ"); },
                                 10'000));
  }
  const int leader = c.LeaderOf(*client, "WEB_DLQ");
  REQUIRE(leader != 0);
  const int down = leader == 3 ? 2 : 3;
  const std::string down_name = "nats-" + std::to_string(down);
  c.stack.Kill(c.stack.NatsNode(down));
  client = c.Connect(down);

  Run r = c.Ctl("dlq purge --queue web --key site-q --yes --json");
  INFO(r.Show());
  CHECK(r.rc == 1);
  WARN("purge with " << down_name << " down, in " << r.seconds << " s:\n" << r.err);
  auto doc = nlohmann::json::parse(r.out);
  CHECK(doc["erased"] == 10);
  CHECK(doc["erasure"]["replicas_ok"] == false);
  bool named = false;
  for (const auto& rep : doc["erasure"]["replicas"]) {
    if (rep["name"] == down_name) {
      named = true;
      CHECK(rep["erased"] == false);
      // Killed a moment ago: the leader sees it behind first, offline after a few seconds.
      auto state = rep["state"].get<std::string>();
      CHECK((state.rfind("offline", 0) == 0 || state.rfind("behind", 0) == 0));
    } else {
      CHECK(rep["erased"] == true);
    }
  }
  CHECK(named);
  // The raft logs: the two live replicas' compacted past the erasure, the down one's unread.
  CHECK(doc["erasure"]["raft_logs_ok"] == false);
  REQUIRE(doc["erasure"]["raft_logs"].size() == 1);  // seeded dead letters: no original in reach
  const auto& log = doc["erasure"]["raft_logs"][0];
  CHECK(log["stream"] == "WEB_DLQ");
  const std::string group = log["group"];
  for (const auto& rep : log["replicas"]) {
    INFO(rep.dump());
    CHECK(rep["state"] == (rep["name"] == down_name ? "unread" : "compacted"));
  }
  std::string not_yet;
  for (const auto& s : doc["erasure"]["not_yet"]) not_yet += s.get<std::string>() + "\n";
  CHECK_THAT(not_yet, Catch::Contains(down_name + " did not erase them"));
  CHECK_THAT(not_yet,
             Catch::Contains("platformctl dlq rebuild --queue web --replica " + down_name));
  CHECK_THAT(not_yet, Catch::Contains("the raft log of WEB_DLQ on " + down_name + " was not read"));
  const std::string seqs = doc["erasure"]["erased_seqs"];
  CHECK(seqs == "6-15");
  const std::string verify = doc["erasure"]["verify_command"];
  auto down_anywhere = [&](int j, const std::string& part) {
    for (int i = 6; i <= 15; ++i) {
      if (c.OnDisk(j, Mark("DOWN-MARK-", i), part)) return i;
    }
    return 0;
  };
  // The live nodes hold them nowhere (their logs compacted past the erasure, which also means
  // the node that was down can only catch up from a snapshot).
  for (int j : Nodes()) {
    if (j != down) CHECK(down_anywhere(j, "") == 0);
  }
  c.stack.Start(c.stack.NatsNode(down));
  client = c.Connect();
  REQUIRE(c.WaitAllCurrent(*client, {"WEB_DLQ"}));
  // What the report warned of: caught up and current, it reports them deleted, yet its block
  // files may still hold their bytes (they did in most runs; in one fresh-clone run on 2.15.1
  // the catch-up left none): the server's doing, so recorded, not required. The others hold
  // none anywhere, and platformctl must say the replica did not erase them either way.
  const bool held_after_catch_up = down_anywhere(down, "streams/WEB_DLQ") != 0;
  WARN(down_name << " after catching up: a purged payload in its block files: "
                 << (held_after_catch_up ? "yes" : "no"));
  WARN(down_name << " after catching up: a purged payload in its raft log: "
                 << (down_anywhere(down, "_js_") != 0 ? "yes" : "no"));
  for (int j : Nodes()) {
    if (j != down) CHECK(down_anywhere(j, "") == 0);
  }
  // verify is told (--not-erased-on) what no answer shows: it fails, naming the replica.
  CHECK_THAT(verify, Catch::EndsWith(" --not-erased-on " + down_name));
  r = c.Ctl(verify.substr(std::string("platformctl ").size()));
  INFO(r.Show());
  CHECK(r.rc == 1);
  CHECK_THAT(r.out, Catch::Contains(down_name + " did not erase them during the erasure"));
  CHECK_THAT(r.out, Catch::Contains("WEB_DLQ on " + down_name + ": compacted past the erasure"));
  const std::string verify_after = verify.substr(
      std::string("platformctl ").size(),
      verify.size() - std::string("platformctl  --not-erased-on ").size() - down_name.size());

  // Forcing it. nats-server 2.10 removes the replica (its copy deleted) and it is added back
  // from a snapshot; 2.15 refuses the removal when no other server can take its place.
  auto varz = nlohmann::json::parse(
      testsupport::Capture("curl -s --max-time 5 '" + c.stack.NatsMonitorUrl(1) + "/varz'"),
      nullptr, false);
  const std::string version = varz.is_object() ? varz.value("version", "") : "";
  const bool refuses = version.rfind("2.10.", 0) != 0 && version.rfind("2.9.", 0) != 0;
  r = c.Ctl("dlq rebuild --queue web --replica " + down_name + " --yes --json");
  INFO(version << "\n" << r.Show());
  auto rebuilt = nlohmann::json::parse(r.out);
  if (refuses) {
    CHECK(r.rc == 1);
    CHECK(rebuilt["removed"] == false);
    CHECK(rebuilt["replica"] == down_name);
    CHECK_THAT(rebuilt["holds"].get<std::string>(),
               Catch::Contains(down_name + " is still a replica of WEB_DLQ: nothing was deleted"));
    const std::string instead = rebuilt["instead"];
    CHECK_THAT(instead, Catch::Contains("STACK/streams/WEB_DLQ and $SYS/_js_/" + group));
    r = c.Ctl("dlq rebuild --queue web --replica " + down_name + " --yes");
    CHECK(r.rc == 1);
    CHECK_THAT(r.out, Catch::Contains("NOT DONE: nats-server refused to remove " + down_name));
    // Nothing was deleted indeed.
    if (held_after_catch_up) CHECK(down_anywhere(down, "streams/WEB_DLQ") != 0);
    // What it says to do instead: stop the node, delete its copy and raft group, start it.
    c.stack.Stop(c.stack.NatsNode(down));
    const std::string store = c.StoreDir(down);
    REQUIRE(testsupport::Run("rm -rf " + store + "/STACK/streams/WEB_DLQ '" + store +
                             "/$SYS/_js_/" + group + "'") == 0);
    c.stack.Start(c.stack.NatsNode(down));
    client = c.Connect();
  } else {
    REQUIRE(r.rc == 0);
    CHECK(rebuilt["removed"] == down_name);
  }
  REQUIRE(c.WaitAllCurrent(*client, {"WEB_DLQ"}));
  for (int j : Nodes()) {
    INFO("node " << j << " after the rebuild");
    CHECK(down_anywhere(j, "") == 0);  // the whole store: blocks and raft logs
    for (int i : {1, 5, 16, 20}) {
      CHECK(testsupport::WaitFor(
          [&] { return c.OnDisk(j, Mark("KEPT-MARK-", i), "streams/WEB_DLQ"); }, 10'000));
    }
  }
  r = c.Ctl("dlq list --queue web --summary --json");
  INFO(r.Show());
  CHECK(r.rc == 0);
  CHECK(nlohmann::json::parse(r.out)["count"] == 10);
  r = c.Ctl(verify_after);
  INFO(r.Show());
  CHECK(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("verified: every replica answered that none of them is "
                                    "stored, and every raft log is compacted past the erasure"));
}
