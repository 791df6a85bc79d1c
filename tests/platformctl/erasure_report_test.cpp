// The erasure report (platformctl/erasure_report): per replica what was erased, what is not yet
// true, the sequences to verify; without NATS.
#include "platformctl/erasure_report.h"

#include <catch2/catch.hpp>

#include <sstream>

#include <nlohmann/json.hpp>

using namespace platformctl::dlq;
using platformctl::nats_admin::Replica;
using platformctl::nats_admin::ReplicaSet;

namespace {

Replica R(const std::string& name, bool leader, bool current, bool offline = false,
          uint64_t lag = 0) {
  Replica r;
  r.name = name;
  r.leader = leader;
  r.current = current;
  r.offline = offline;
  r.lag = lag;
  r.active_seconds_ago = offline ? 14.2 : 0.1;
  return r;
}

ReplicaSet Three(std::vector<Replica> peers) {
  ReplicaSet rs;
  rs.configured = 3;
  rs.raft = true;
  rs.peers = std::move(peers);
  return rs;
}

ErasureFacts Facts(std::vector<uint64_t> seqs, uint64_t origin_base = 1000) {
  ErasureFacts f;
  for (uint64_t s : seqs) {
    Entry e;
    e.seq = s;
    e.stream = "WEB_EVENTS";
    e.stream_seq = origin_base + s;
    f.Erased(e);
  }
  return f;
}

bool Has(const std::vector<std::string>& v, const std::string& part) {
  for (const auto& s : v) {
    if (s.find(part) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("erasure report: sequence ranges print and parse", "[dlq]") {
  CHECK(FormatSeqRanges({}) == "");
  CHECK(FormatSeqRanges({5}) == "5");
  CHECK(FormatSeqRanges({1, 2, 3, 5, 7, 8}) == "1-3,5,7-8");
  auto p = ParseSeqRanges("7-8,1-3,5,2");
  REQUIRE(p.ok());
  CHECK(*p == std::vector<uint64_t>{1, 2, 3, 5, 7, 8});
  for (const char* bad : {"", "0", "3-1", "1,", ",1", "a", "1-", "-2", "1--2", "1 2"}) {
    INFO(bad);
    CHECK_FALSE(ParseSeqRanges(bad).ok());
  }
  CHECK_FALSE(ParseSeqRanges("1-20000000").ok());  // more than kMaxVerifySeqs
}

TEST_CASE("erasure report: three current replicas erased, raft logs and originals pending",
          "[dlq]") {
  auto q = InfoFor(Queue::kWeb);
  auto all = Three({R("nats-1", true, true), R("nats-2", false, true), R("nats-3", false, true)});
  auto r = MakeErasureReport(q, all, all, Facts({1, 2, 3, 9}), {{"WEB_EVENTS", 40}});
  CHECK(r.replicas_ok);
  REQUIRE(r.replicas.size() == 3);
  for (const auto& l : r.replicas) CHECK(l.erased);
  CHECK(r.erased_seqs == "1-3,9");
  CHECK(r.verify_command == "platformctl dlq verify --queue web --seqs 1-3,9");
  CHECK(Has(r.not_yet, "the raft log of WEB_DLQ on every replica"));
  CHECK(Has(r.not_yet, "4 originals in WEB_EVENTS (seq 1001..1009) were acknowledged"));
  CHECK(Has(r.not_yet, "WEB_EVENTS holds 40 messages now"));
  CHECK(Has(r.not_yet, "the raft log of WEB_EVENTS"));
  // Raft logs not checked (no reading given): not proven, so the run is not done.
  CHECK_FALSE(r.raft_logs_ok);
  CHECK_FALSE(r.ok());
  CHECK_FALSE(Has(r.not_yet, "did not erase"));
  std::ostringstream out;
  PrintErasureText(r, out);
  CHECK_THAT(out.str(), Catch::Contains("  nats-2: current: erased from its block files\n"));
  CHECK_THAT(out.str(), Catch::Contains("verify later: platformctl dlq verify"));
  auto j = nlohmann::json::parse(ErasureJson(r));
  CHECK(j["replicas_ok"] == true);
  CHECK(j["replicas"].size() == 3);
}

TEST_CASE("erasure report: an offline or lagging replica did not erase: exit 1 and how to force",
          "[dlq]") {
  auto q = InfoFor(Queue::kWeb);
  auto before =
      Three({R("nats-1", true, true), R("nats-2", false, true), R("nats-3", false, false, true)});
  auto r = MakeErasureReport(q, before, before, Facts({4}), {{"WEB_EVENTS", 0}});
  CHECK_FALSE(r.replicas_ok);
  CHECK(r.replicas[2].name == "nats-3");
  CHECK_FALSE(r.replicas[2].erased);
  CHECK(r.replicas[2].state == "offline (last heard from 14 s ago)");
  CHECK(Has(r.not_yet, "nats-3 did not erase them"));
  CHECK(Has(r.not_yet, "platformctl dlq rebuild --queue web --replica nats-3 --yes"));
  // verify is told which replica did not erase them (no answer of the server shows it).
  CHECK(r.verify_command == "platformctl dlq verify --queue web --seqs 4 --not-erased-on nats-3");
  // The origin stream is empty: its block files hold none of them (said as done).
  CHECK(Has(r.done,
            "1 original in WEB_EVENTS (seq 1004), acknowledged when dead-lettered, is "
            "gone from its block files"));

  // Behind during the run, current after: still not proven erased there.
  auto lagging = Three(
      {R("nats-1", true, true), R("nats-2", false, true), R("nats-3", false, false, false, 12)});
  auto after = Three({R("nats-1", true, true), R("nats-2", false, true), R("nats-3", false, true)});
  auto r2 = MakeErasureReport(q, lagging, after, Facts({4}), {});
  CHECK_FALSE(r2.replicas_ok);
  CHECK(r2.replicas[2].state == "current, but behind (12 log entries) when the run began");

  // A replica missing (removed, not replaced): the set is short.
  auto two = Three({R("nats-1", true, true), R("nats-2", false, true)});
  auto r3 = MakeErasureReport(q, two, two, Facts({4}), {});
  CHECK_FALSE(r3.replicas_ok);
  CHECK(Has(r3.not_yet, "WEB_DLQ has 2 of its 3 replicas"));

  // Nothing erased: nothing pending, no verify command.
  auto r4 = MakeErasureReport(q, before, before, ErasureFacts{}, {});
  CHECK(r4.replicas_ok);  // a replica is down, but it has nothing to erase
  CHECK(r4.not_yet.empty());
  CHECK(r4.verify_command.empty());
}

TEST_CASE("erasure report: one replica has no raft log, only the originals can be pending",
          "[dlq]") {
  auto q = InfoFor(Queue::kApi);
  ReplicaSet one;  // a single server: no cluster section at all
  ErasureFacts f;
  Entry e;
  e.seq = 3;
  e.stream = "API_METRICS";
  e.stream_seq = 77;
  f.Erased(e);
  Entry foreign = e;
  foreign.seq = 4;
  foreign.stream = "SOMETHING_ELSE";
  f.Erased(foreign);
  auto r = MakeErasureReport(q, one, one, f, {{"API_METRICS", 5}});
  CHECK(r.replicas_ok);
  CHECK_FALSE(r.raft);
  REQUIRE(r.not_yet.size() == 1);
  CHECK_THAT(r.not_yet[0], Catch::Contains("1 original in API_METRICS (seq 77) was acknowledged"));
  CHECK_FALSE(Has(r.not_yet, "raft"));
  CHECK_FALSE(Has(r.not_yet, "SOMETHING_ELSE"));
  std::ostringstream out;
  PrintErasureText(r, out);
  CHECK_THAT(out.str(), Catch::StartsWith("copies: one replica, no raft log"));
}
