// The pure parts of the JetStream adapters platformctl relies on during an incident: how long
// a request is retried, the answers of nats-server 2.9 with a node down (a consumer list with
// offline entries and "missing" names, stream replicas), stored-message decoding.
#include <catch2/catch.hpp>

#include <chrono>
#include <string>

#include "common/base64.h"
#include "common/js_error.h"
#include "platformctl/dlq/nats.h"
#include "platformctl/dlq/nats_get.h"
#include "platformctl/nats_admin.h"

using platformctl::nats_admin::Patience;
using std::chrono::milliseconds;

TEST_CASE("patience: growing delays, renewed by progress, never past its limit", "[dlq]") {
  auto t = Patience::Clock::time_point{};
  Patience p(milliseconds(3000), [&] { return t; });
  std::vector<int64_t> delays;
  while (auto d = p.NextDelay()) {
    delays.push_back(d->count());
    t += *d;
  }
  CHECK(delays == std::vector<int64_t>{100, 200, 400, 800, 1000, 500});
  CHECK(p.waited() == milliseconds(3000));
  p.Progress();
  CHECK(p.waited() == milliseconds(0));
  REQUIRE(p.NextDelay());
  CHECK(p.NextDelay()->count() == 200);  // the second try of the new wait
  t += milliseconds(5000);
  CHECK_FALSE(p.NextDelay());
}

TEST_CASE("JetStream answers: errors by kind, times", "[dlq]") {
  using common::ErrorKind;
  using platformctl::nats_admin::ApiError;
  CHECK_FALSE(ApiError(R"({"type":"x","success":true})", "w"));
  CHECK_FALSE(ApiError("not json", "w"));
  auto na = ApiError(
      R"({"error":{"code":503,"err_code":10008,"description":"JetStream system temporarily unavailable"}})",
      "read WEB_DLQ");
  REQUIRE(na);
  CHECK(na->kind == ErrorKind::kRetryable);
  CHECK(na->message ==
        "read WEB_DLQ: JetStream system temporarily unavailable (JetStream error 10008)");
  auto nf =
      ApiError(R"({"error":{"code":404,"err_code":10037,"description":"no message found"}})", "w");
  REQUIRE(nf);
  CHECK(nf->kind == ErrorKind::kNotFound);
  auto perm =
      ApiError(R"({"error":{"code":503,"err_code":10075,"description":"peer remap failed"}})", "w");
  REQUIRE(perm);
  CHECK(perm->kind == ErrorKind::kPermanent);
  // The error number is a field of the error: RemovePeer branches on it, never on the text.
  CHECK(perm->code == common::js_error::kPeerRemapFailed);
  CHECK(na->code == 10008);
  CHECK(nf->code == 10037);
  CHECK(ApiError(R"({"error":{"code":500,"description":"odd"}})", "w")->code == 0);
  // An error number an int cannot hold is none: cast, 2^32 + 10057 read as 10057 (a message
  // delete refused), a float is not read at all.
  auto wide = ApiError(R"({"error":{"code":400,"err_code":4294977353,"description":"x"}})", "w");
  REQUIRE(wide);
  CHECK(wide->code == 0);
  CHECK(ApiError(R"({"error":{"code":1.44e127,"err_code":1e300,"description":"x"}})", "w")->code ==
        0);

  using platformctl::nats_admin::ParseJsTime;
  CHECK(ParseJsTime("1970-01-01T00:00:01Z") == 1'000'000'000);
  CHECK(ParseJsTime("2026-12-01T09:55:08.175123456Z") == 1796118908175123456);
  CHECK(ParseJsTime("2026-12-01T10:55:08.175123456+01:00") == 1796118908175123456);
  CHECK(ParseJsTime("0001-01-01T00:00:00Z") == 0);
  CHECK_FALSE(ParseJsTime("2026-12-01 09:55:08Z"));
  CHECK_FALSE(ParseJsTime("2026-12-01T09:55:08"));
  CHECK_FALSE(ParseJsTime("2026-12-01"));  // a day alone is an operator's input, no answer
  CHECK_FALSE(ParseJsTime(""));
  // Past April 2262 unix nanoseconds overflow 64 bits (tests/fuzz found it: year 6220).
  CHECK(ParseJsTime("2262-04-11T00:00:00Z") == std::nullopt);
  CHECK(ParseJsTime("9999-12-31T23:59:59Z") == std::nullopt);
  CHECK(ParseJsTime("2261-12-31T23:59:59Z").has_value());
}

TEST_CASE("consumer list: a node down gives offline entries, never a failure", "[dlq]") {
  // nats-server 2.9.10 with the node holding an ephemeral consumer killed: an entry made up
  // from its assignment (no name, offline replicas), a live durable, and a name that did not
  // answer within the server's 4 s (a node paused with SIGSTOP).
  const char* answer = R"({"type":"io.nats.jetstream.api.v1.consumer_list_response","total":3,
    "offset":0,"limit":256,"consumers":[
      {"config":{"deliver_policy":"by_start_sequence","ack_policy":"none"},
       "created":"2026-12-01T09:55:20Z",
       "cluster":{"name":"c","replicas":[{"name":"nats-2","current":false,"offline":true,"active":0}]}},
      {"stream_name":"WEB_EVENTS","name":"replayer","created":"2026-12-01T09:00:00Z",
       "config":{"durable_name":"replayer","max_ack_pending":900},
       "delivered":{"consumer_seq":120,"stream_seq":130,"last_active":"2026-12-01T09:59:00Z"},
       "ack_floor":{"consumer_seq":100,"stream_seq":110,"last_active":"2026-12-01T09:58:59.5Z"},
       "num_ack_pending":20,"num_redelivered":2,"num_waiting":1,"num_pending":7,
       "cluster":{"name":"c","leader":"nats-1","replicas":[{"name":"nats-2","current":true,"active":1}]}}],
    "missing":["EDKM4V25","PAUSED99"]})";
  auto page = platformctl::nats_admin::ParseConsumerList(answer);
  REQUIRE(page.ok());
  REQUIRE(page->consumers.size() == 3);
  const auto& dead = page->consumers[0];
  CHECK(dead.name == "EDKM4V25");
  CHECK(dead.offline);
  const auto& r = page->consumers[1];
  CHECK(r.name == "replayer");
  CHECK_FALSE(r.offline);
  CHECK(r.pending == 7);
  CHECK(r.unacked == 20);
  CHECK(r.redelivered == 2);
  CHECK(r.delivered_seq == 120);
  CHECK(r.ack_floor_seq == 100);
  CHECK(r.max_ack_pending == 900);
  CHECK(r.waiting_pulls == 1);
  CHECK(r.last_acked_ns == *platformctl::nats_admin::ParseJsTime("2026-12-01T09:58:59.5Z"));
  CHECK(page->consumers[2].name == "PAUSED99");
  CHECK(page->consumers[2].offline);
  CHECK(page->total == 3);
  CHECK(page->limit == 256);
  CHECK_FALSE(platformctl::nats_admin::ParseConsumerList("[1]").ok());
  auto empty = platformctl::nats_admin::ParseConsumerList(R"({"total":0,"consumers":[]})");
  REQUIRE(empty.ok());
  CHECK(empty->consumers.empty());
}

TEST_CASE("replicas: the leader's view of each, and whether all are current", "[dlq]") {
  auto rs = platformctl::nats_admin::ParseReplicas(R"({"config":{"name":"WEB_DLQ","num_replicas":3},
    "state":{"messages":6,"first_seq":21,"last_seq":26,"num_deleted":0},
    "cluster":{"name":"c","leader":"nats-3","replicas":[
      {"name":"nats-1","current":true,"active":51000000,"lag":0},
      {"name":"nats-2","current":false,"offline":true,"active":12000000000,"lag":40}]}})");
  REQUIRE(rs.ok());
  CHECK(rs->raft);
  CHECK(rs->configured == 3);
  CHECK(rs->Leader() == "nats-3");
  REQUIRE(rs->peers.size() == 3);
  CHECK(rs->peers[2].name == "nats-2");
  CHECK(rs->peers[2].offline);
  CHECK(rs->peers[2].lag == 40);
  CHECK(rs->peers[2].active_seconds_ago == Approx(12.0));
  CHECK_FALSE(rs->AllCurrent());
  CHECK(rs->messages == 6);
  auto all = platformctl::nats_admin::ParseReplicas(R"({"config":{"num_replicas":3},"state":{},
    "cluster":{"leader":"nats-1","replicas":[{"name":"nats-2","current":true},
      {"name":"nats-3","current":true}]}})");
  REQUIRE(all.ok());
  CHECK(all->AllCurrent());
  // A peer removed and not replaced: fewer peers than configured is not "all current".
  auto two = platformctl::nats_admin::ParseReplicas(R"({"config":{"num_replicas":3},"state":{},
    "cluster":{"leader":"nats-1","replicas":[{"name":"nats-2","current":true}]}})");
  REQUIRE(two.ok());
  CHECK_FALSE(two->AllCurrent());
  // One replica (a single server, or R1 in a cluster): no raft group.
  auto one = platformctl::nats_admin::ParseReplicas(
      R"({"config":{"num_replicas":1},"state":{"messages":1},"cluster":{"leader":"n"}})");
  REQUIRE(one.ok());
  CHECK_FALSE(one->raft);
  CHECK(one->AllCurrent());
}

TEST_CASE("peer removal: done only when the peer is no longer a replica, whatever the answer",
          "[dlq]") {
  using platformctl::nats_admin::JudgePeerRemoval;
  using platformctl::nats_admin::ParseReplicas;
  const std::string remap = "peer remap failed (JetStream error 10075)";
  // 2.9 and 2.10: 10075, and the peer is gone (the stream runs on two until one is added back).
  auto gone = ParseReplicas(R"({"config":{"num_replicas":3},"state":{},
    "cluster":{"leader":"nats-1","replicas":[{"name":"nats-2","current":true}]}})");
  REQUIRE(gone.ok());
  CHECK(JudgePeerRemoval("WEB_DLQ", "nats-3", *gone, remap).ok());
  // 2.15: the same 10075, and the peer is still there: a failure naming it and the replicas.
  auto kept = ParseReplicas(R"({"config":{"num_replicas":3},"state":{},
    "cluster":{"leader":"nats-1","replicas":[{"name":"nats-2","current":true},
      {"name":"nats-3","current":true}]}})");
  REQUIRE(kept.ok());
  auto refused = JudgePeerRemoval("WEB_DLQ", "nats-3", *kept, remap);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().kind == common::ErrorKind::kPermanent);
  CHECK(refused.error().message.find("did not remove nats-3 from the replicas of WEB_DLQ") !=
        std::string::npos);
  CHECK(refused.error().message.find("10075") != std::string::npos);
  CHECK(refused.error().message.find("replicas: nats-1 (leader), nats-2, nats-3") !=
        std::string::npos);
  // A success answer counts no more than the replicas read back: the leader is a replica too.
  auto leader = JudgePeerRemoval("WEB_DLQ", "nats-1", *kept, "success");
  REQUIRE_FALSE(leader.ok());
  CHECK(leader.error().message.find("answered: success") != std::string::npos);
  // Replaced by a spare server: the new peer does not matter, the removed one is gone.
  auto replaced = ParseReplicas(R"({"config":{"num_replicas":3},"state":{},
    "cluster":{"leader":"nats-1","replicas":[{"name":"nats-2"},{"name":"nats-4"}]}})");
  REQUIRE(replaced.ok());
  CHECK(JudgePeerRemoval("WEB_DLQ", "nats-3", *replaced, "success").ok());
}

TEST_CASE("erase: a retry refused as gone is erased only when the stream no longer holds it",
          "[dlq]") {
  // A redrive task's erase whose answer a DLQ leader change lost: the retry is refused because
  // the first send erased the message (nats-server answers 10057 "no message found" below the
  // stream's first sequence, 10043 "sequence not found" inside it).
  using platformctl::nats_dlq::JudgeRefusedErase;
  using platformctl::nats_dlq::RefusedErase;
  auto refusal = [](common::ErrorKind kind, int code) {
    common::Error e{kind, "erase WEB_DLQ #7: refused"};
    e.code = code;
    return e;
  };
  const auto gone =
      refusal(common::ErrorKind::kPermanent, common::js_error::kStreamMsgDeleteFailed);
  const auto not_found =
      refusal(common::ErrorKind::kPermanent, common::js_error::kSequenceNotFound);
  for (const auto& e : {gone, not_found}) {
    // The first send's refusal stands: nothing of ours can have erased it.
    CHECK(JudgeRefusedErase(1, e, std::nullopt) == RefusedErase::kStands);
    CHECK(JudgeRefusedErase(1, e, false) == RefusedErase::kStands);
    // A retry's: the stream is read, and says.
    CHECK(JudgeRefusedErase(2, e, std::nullopt) == RefusedErase::kReadStream);
    CHECK(JudgeRefusedErase(3, e, false) == RefusedErase::kErased);
    CHECK(JudgeRefusedErase(2, e, true) == RefusedErase::kStands);
  }
  // Another refusal of a retry stands, whatever its text says.
  auto full = refusal(common::ErrorKind::kPermanent, common::js_error::kStoreFailed);
  full.message = "erase WEB_DLQ #7: no message found";
  CHECK(JudgeRefusedErase(2, full, std::nullopt) == RefusedErase::kStands);
  CHECK(JudgeRefusedErase(2, full, false) == RefusedErase::kStands);
  // "Not found" on a retry was taken as erased before, without a read; still so.
  const auto nf = refusal(common::ErrorKind::kNotFound, common::js_error::kNoMessageFound);
  CHECK(JudgeRefusedErase(2, nf, std::nullopt) == RefusedErase::kErased);
  CHECK(JudgeRefusedErase(1, nf, std::nullopt) == RefusedErase::kStands);
}

TEST_CASE("stored messages: header blocks and base64 as JetStream returns them", "[dlq]") {
  using common::DecodeBase64;  // common/base64.h (its own tests: tests/unit/base64_test.cpp)
  using platformctl::nats_dlq::ParseHeaderBlock;
  CHECK(ParseHeaderBlock("NATS/1.0\r\nSa-Dlq-Reason: a: b\r\nX:y\r\nX: z\r\n\r\n") ==
        common::Headers{{"Sa-Dlq-Reason", "a: b"}, {"X", "y"}, {"X", "z"}});
  CHECK(ParseHeaderBlock("NATS/1.0\r\n\r\n").empty());
  CHECK(ParseHeaderBlock("").empty());
  CHECK(DecodeBase64("TkFUUy8xLjANCg0K") == std::string("NATS/1.0\r\n\r\n"));
  CHECK(DecodeBase64("YQ==") == std::string("a"));
  CHECK(DecodeBase64("YWI=") == std::string("ab"));
  CHECK(DecodeBase64("") == std::string());
  CHECK_FALSE(DecodeBase64("Y*=="));
  CHECK_FALSE(DecodeBase64("Y"));

  // A message get's answer: its sequence is read only as a whole number (a float is undefined
  // behaviour to convert, a string threw out of platformctl).
  using platformctl::nats_dlq::detail::ParseGet;
  auto got = ParseGet(R"({"message":{"subject":"dlq.web.s","seq":41,"data":"YQ=="}})", "g", true);
  REQUIRE(got);
  REQUIRE(got->has_value());
  CHECK((*got)->seq == 41);
  CHECK((*got)->subject == "dlq.web.s");
  CHECK((*got)->data == "a");
  for (const char* seq : {"1.44e127", "41.0", "-41", "\"41\"", "null"}) {
    INFO(seq);
    auto bad = ParseGet(std::string(R"({"message":{"subject":"dlq.web.s","seq":)") + seq + "}}",
                        "g", false);
    REQUIRE_FALSE(bad);
    CHECK(bad.error().message == "g: a message without a sequence");
  }
  // A consumer's create answer: nothing to deliver only when nothing is pending and nothing was
  // delivered. Sent again after a lost answer, the create answers with the consumer the first
  // one made, which may have delivered everything already (pending 0): the walk goes on.
  using platformctl::nats_dlq::detail::NothingToDeliver;
  CHECK(NothingToDeliver(R"({"num_pending":0,"delivered":{"consumer_seq":0,"stream_seq":0}})"));
  CHECK_FALSE(
      NothingToDeliver(R"({"num_pending":0,"delivered":{"consumer_seq":60,"stream_seq":60}})"));
  CHECK_FALSE(
      NothingToDeliver(R"({"num_pending":60,"delivered":{"consumer_seq":0,"stream_seq":0}})"));
  CHECK_FALSE(NothingToDeliver(R"({"num_pending":0})"));
  CHECK_FALSE(NothingToDeliver(R"({"num_pending":0.0,"delivered":{"consumer_seq":0}})"));
  CHECK_FALSE(NothingToDeliver(R"({"num_pending":0,"delivered":{"consumer_seq":"0"}})"));
  CHECK_FALSE(NothingToDeliver("not json"));
  CHECK_FALSE(NothingToDeliver("[]"));

  // Another type where a text is expected is no text, not a throw.
  auto odd = ParseGet(R"({"message":{"subject":7,"time":[],"seq":3}})", "g", false);
  REQUIRE(odd);
  CHECK((*odd)->subject.empty());
  CHECK((*odd)->time_ns == 0);
}
