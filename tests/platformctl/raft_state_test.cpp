// The raft logs after an erasure (platformctl/raft_state, the report's use of it): raftz and jsz
// answers as nats-server 2.10.27 and 2.15.1 give them, and the verdict per replica; without NATS.
#include "platformctl/raft_state.h"

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "platformctl/erasure_report.h"

using namespace platformctl::raft;

namespace {

// A $SYS.REQ.SERVER.PING.RAFTZ answer of one server (2.10.27's, trimmed).
std::string Raftz(const std::string& server, uint64_t committed, uint64_t first, uint64_t last) {
  return R"({"server":{"name":")" + server +
         R"(","host":"127.0.0.1","ver":"2.10.27","jetstream":true},"data":{"CORE":{"S-R3F-exovkPNj":{"id":"yrzKKRBu","state":"FOLLOWER","size":3,"committed":)" +
         std::to_string(committed) + R"(,"applied":)" + std::to_string(committed) +
         R"(,"wal":{"messages":)" + std::to_string(last + 1 - first) +
         R"(,"bytes":5254,"first_seq":)" + std::to_string(first) +
         R"(,"first_ts":"2026-12-06T08:30:35.7707691Z","last_seq":)" + std::to_string(last) +
         R"(,"consumer_count":0},"peers":{}}}}})";
}

LogState State(const std::string& server, uint64_t first, uint64_t last = 400) {
  LogState s;
  s.server = server;
  s.committed = last;
  s.first = first;
  s.last = last;
  return s;
}

}  // namespace

TEST_CASE("raft state: raftz answers of a replica, of a server without the group, and errors",
          "[dlq]") {
  auto s = ParseRaftz(Raftz("nats-2", 31, 1, 31), "CORE", "S-R3F-exovkPNj");
  REQUIRE(s.ok());
  REQUIRE(s->has_value());
  CHECK((*s)->server == "nats-2");
  CHECK((*s)->committed == 31);
  CHECK((*s)->first == 1);
  CHECK((*s)->last == 31);
  CHECK((*s)->entries == 31);
  // An empty log after a snapshot: first above last (2.15.1: first_seq 348, last_seq 347).
  auto empty = ParseRaftz(Raftz("nats-3", 347, 348, 347), "CORE", "S-R3F-exovkPNj");
  REQUIRE(empty.ok());
  CHECK((*empty)->first == 348);
  // Another group or account: that server holds no replica of it.
  auto none = ParseRaftz(Raftz("nats-1", 31, 1, 31), "CORE", "S-R3F-other");
  REQUIRE(none.ok());
  CHECK_FALSE(none->has_value());
  CHECK_FALSE(ParseRaftz(R"({"server":{"name":"nats-1"},"data":{}})", "CORE", "g")->has_value());
  // Not an answer, an error answer, a group without its log, wrong types: errors, no throw.
  CHECK_FALSE(ParseRaftz("not json", "CORE", "g").ok());
  auto err =
      ParseRaftz(R"({"server":{"name":"nats-1"},"error":{"code":500,"description":"bad account"}})",
                 "CORE", "g");
  REQUIRE_FALSE(err.ok());
  CHECK(err.error().message == "raftz of nats-1: bad account");
  CHECK_FALSE(ParseRaftz(R"({"server":{"name":"nats-1"},"data":{"CORE":{"g":{"committed":3}}}})",
                         "CORE", "g")
                  .ok());
  auto odd = ParseRaftz(
      R"({"server":{"name":"n"},"data":{"CORE":{"g":{"committed":"x","wal":{"first_seq":-4}}}}})",
      "CORE", "g");
  REQUIRE(odd.ok());
  CHECK((*odd)->committed == 0);
  CHECK((*odd)->first == 0);
}

TEST_CASE("raft state: the account of a raft group from jsz, the group from stream info", "[dlq]") {
  // 2.10.27's $SYS.REQ.SERVER.PING.JSZ answer with {"accounts":true,"streams":true}, trimmed.
  const std::string jsz =
      R"({"server":{"name":"nats-1"},"data":{"account_details":[{"name":"APP","id":"APP"},
      {"name":"CORE","id":"CORE","stream_detail":[{"name":"WEB_DLQ","cluster":{"name":"c",
      "raft_group":"S-R3F-X8CqBHQb","leader":"nats-1"},"stream_raft_group":"S-R3F-X8CqBHQb"}]}]}})";
  CHECK(AccountOfGroup(jsz, "S-R3F-X8CqBHQb") == "CORE");
  CHECK(AccountOfGroup(jsz, "S-R3F-other") == "");
  CHECK(AccountOfGroup("[]", "g") == "");
  CHECK(AccountOfGroup(R"({"data":{"account_details":[{"name":"A","stream_detail":[1]}]}})", "g") ==
        "");
  CHECK(GroupOfStreamInfo(
            R"({"config":{},"cluster":{"leader":"nats-1","raft_group":"S-R3F-a"}})") == "S-R3F-a");
  // nats-server 2.9 names no group.
  CHECK(GroupOfStreamInfo(R"({"config":{},"cluster":{"leader":"nats-1"}})") == "");
}

TEST_CASE(
    "raft state: a replica's log is clear of the erasure only once its oldest entry is above it",
    "[dlq]") {
  const std::vector<std::string> replicas = {"nats-1", "nats-2", "nats-3"};
  auto v =
      JudgeLogs(replicas, {State("nats-1", 32), State("nats-2", 31), State("nats-3", 300)}, 31);
  REQUIRE(v.replicas.size() == 3);
  CHECK(v.replicas[0].state == ReplicaLog::State::kCompacted);
  CHECK(v.replicas[1].state == ReplicaLog::State::kHolds);  // entry 31 may carry an erased one
  CHECK(v.replicas[2].state == ReplicaLog::State::kCompacted);
  CHECK_FALSE(v.all_compacted);
  CHECK_FALSE(v.answered_compacted);
  CHECK(Describe(v.replicas[1], 31) ==
        "STILL HOLDS entries 31..31 from before the erasure, until its next snapshot");
  CHECK(Describe(v.replicas[0], 31) ==
        "compacted past the erasure (its oldest entry: 32, the erasure's: 31)");

  // One did not answer: the others are compacted, the set is not.
  auto down = JudgeLogs(replicas, {State("nats-1", 40), State("nats-3", 40)}, 31);
  CHECK(down.replicas[1].state == ReplicaLog::State::kUnread);
  CHECK_FALSE(down.all_compacted);
  CHECK(down.answered_compacted);
  CHECK(Describe(down.replicas[1], 31) == "NOT READ: its server did not answer");
  // A server that is not a replica (an answer for a replica removed since) does not count.
  auto all = JudgeLogs(
      replicas, {State("nats-1", 40), State("nats-2", 40), State("nats-3", 40), State("nats-4", 1)},
      31);
  CHECK(all.all_compacted);
  CHECK_FALSE(JudgeLogs({}, {}, 31).all_compacted);
  CHECK(HighestCommitted({State("a", 1, 30), State("b", 1, 31)}) == 31);
}

TEST_CASE(
    "erasure report: the raft logs checked: compacted on every replica, or which one holds what",
    "[dlq]") {
  using namespace platformctl::dlq;
  using platformctl::nats_admin::Replica;
  using platformctl::nats_admin::ReplicaSet;
  auto q = InfoFor(Queue::kWeb);
  ReplicaSet all;
  all.configured = 3;
  all.raft = true;
  for (const char* n : {"nats-1", "nats-2", "nats-3"}) {
    Replica r;
    r.name = n;
    r.leader = all.peers.empty();
    r.current = true;
    all.peers.push_back(r);
  }
  ErasureFacts facts;
  Entry e;
  e.seq = 7;
  e.stream = "WEB_EVENTS";
  e.stream_seq = 107;
  facts.Erased(e);
  const std::vector<std::string> names = {"nats-1", "nats-2", "nats-3"};
  LogCheck dlq{"WEB_DLQ", "CORE", "S-R3F-a", 31, {}, ""};
  dlq.verdict =
      JudgeLogs(names, {State("nats-1", 40), State("nats-2", 40), State("nats-3", 40)}, 31);
  LogCheck origin{"WEB_EVENTS", "CORE", "S-R3F-b", 90, {}, ""};
  origin.verdict =
      JudgeLogs(names, {State("nats-1", 95), State("nats-2", 12), State("nats-3", 95)}, 90);

  auto r = MakeErasureReport(q, all, all, facts, {{"WEB_EVENTS", 3}}, {dlq, origin});
  CHECK(r.replicas_ok);
  CHECK_FALSE(r.raft_logs_ok);
  CHECK_FALSE(r.ok());
  CHECK(r.verify_command == "platformctl dlq verify --queue web --seqs 7 --raft-index 31");
  auto has = [](const std::vector<std::string>& v, const std::string& part) {
    for (const auto& s : v) {
      if (s.find(part) != std::string::npos) return true;
    }
    return false;
  };
  CHECK(has(r.done, "the raft log of WEB_DLQ on every replica was compacted past the erasure"));
  CHECK(has(r.not_yet, "the raft log of WEB_EVENTS on nats-2 still holds entries 12..90"));
  CHECK_FALSE(has(r.not_yet, "the raft log of WEB_DLQ"));
  std::ostringstream out;
  PrintErasureText(r, out);
  CHECK_THAT(out.str(), Catch::Contains("raft logs:\n  WEB_DLQ on nats-1: compacted past"));
  CHECK_THAT(out.str(), Catch::Contains("WEB_EVENTS on nats-2: STILL HOLDS entries 12..90"));
  auto j = nlohmann::json::parse(ErasureJson(r));
  CHECK(j["raft_logs_ok"] == false);
  REQUIRE(j["raft_logs"].size() == 2);
  CHECK(j["raft_logs"][1]["replicas"][1]["state"] == "holds");
  CHECK(j["raft_logs"][0]["ok"] == true);

  // Every log compacted: the report is all done.
  origin.verdict =
      JudgeLogs(names, {State("nats-1", 95), State("nats-2", 95), State("nats-3", 95)}, 90);
  auto ok = MakeErasureReport(q, all, all, facts, {{"WEB_EVENTS", 3}}, {dlq, origin});
  CHECK(ok.ok());
  // Unreadable (nats-server 2.9, or the user may not ask): not proven, exit 1.
  LogCheck unread{"WEB_DLQ", "", "", 0, {}, "stream info WEB_DLQ names no raft group"};
  auto no = MakeErasureReport(q, all, all, facts, {{"WEB_EVENTS", 3}}, {unread, origin});
  CHECK_FALSE(no.ok());
  CHECK(has(no.not_yet,
            "the raft logs of WEB_DLQ could not be read (stream info WEB_DLQ names no "
            "raft group)"));
  CHECK(no.verify_command == "platformctl dlq verify --queue web --seqs 7");
  // Read, but no replica known: nothing was checked, so nothing is claimed.
  LogCheck nobody{"WEB_DLQ", "CORE", "S-R3F-a", 31, JudgeLogs({}, {}, 31), ""};
  auto none = MakeErasureReport(q, all, all, facts, {{"WEB_EVENTS", 3}}, {nobody, origin});
  CHECK_FALSE(none.ok());
  CHECK(has(none.not_yet, "the replicas of WEB_DLQ were not known"));
}
