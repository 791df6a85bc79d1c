// KvBucket::GetMany (the replayer's batched duplicate-guard and visit-state reads) and WriteMany
// (the crash-loop guard's marker with the last one's removal) against a real nats-server: the
// same answers as one Get, Put or Delete per key, for present, absent and deleted keys, for a
// bucket without direct gets, for a stream that refuses a write and for one that is gone. And
// the crash-loop guard over a fetched batch, as the replayer's fetch thread drives it.

#include <nats/nats.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/crash_guard.h"
#include "common/crash_guard_kv.h"
#include "common/js_error.h"
#include "common/nats_client.h"
#include "common/nats_kv.h"
#include "common/topology.h"
#include "tests/support/nats_cluster.h"
#include "tests/support/test_stack.h"

using testsupport::TestStack;

namespace {

void CheckSameAsGet(common::KvBucket& kv, const std::vector<std::string>& keys) {
  auto many = kv.GetMany(keys);
  REQUIRE(many.size() == keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    INFO("key " << keys[i] << ": " << (many[i].ok() ? std::string("ok") : many[i].error().message));
    auto one = kv.Get(keys[i]);
    REQUIRE(one.ok());
    REQUIRE(many[i].ok());
    REQUIRE(many[i]->has_value() == one->has_value());
    if (one->has_value()) {
      CHECK((*many[i])->value == (*one)->value);
      CHECK((*many[i])->revision == (*one)->revision);
    }
  }
}

}  // namespace

TEST_CASE("KV GetMany answers as Get does, in one round trip", "[integration][kv]") {
  TestStack stack({"nats"});
  int rc = 0;
  testsupport::Capture("NATS_URL=" + stack.Env("NATS_URL") + " " + testsupport::BinaryDir() +
                           "/platformctl/platformctl init 2>&1",
                       &rc);
  REQUIRE(rc == 0);
  auto client = testsupport::ConnectNats(stack);
  auto kv = common::KvBucket::Bind(*client, common::topology::kStoredIdsBucket);
  REQUIRE(kv.ok());
  std::vector<std::string> keys;
  for (int i = 0; i < 300; ++i) {
    std::string key = "ev-" + std::to_string(i);
    keys.push_back(key);
    if (i % 3 != 0) REQUIRE((*kv)->Put(key, "seq " + std::to_string(i)).ok());
  }
  REQUIRE((*kv)->Delete("ev-1").ok());   // deleted: absent, like Get says
  REQUIRE((*kv)->Put("ev-2", "").ok());  // present with an empty value
  CheckSameAsGet(**kv, keys);
  auto many = (*kv)->GetMany({"ev-4", "ev-0", "ev-1", "ev-2"});
  REQUIRE(many[0]->has_value());
  CHECK((*many[0])->value == "seq 4");
  CHECK_FALSE(many[1]->has_value());
  CHECK_FALSE(many[2]->has_value());
  REQUIRE(many[3]->has_value());
  CHECK((*many[3])->value.empty());
  CHECK((*kv)->GetMany({}).empty());
}

TEST_CASE("KV GetMany falls back to Get on a bucket without direct gets", "[integration][kv]") {
  TestStack stack({"nats"});
  auto client = testsupport::ConnectNats(stack);
  // A bucket's stream made without allow_direct, as older tools did: direct gets find no
  // responder and GetMany must still answer.
  REQUIRE(
      testsupport::AddRawStream(
          *client, {.name = "KV_plain_kv", .subject = "$KV.plain_kv.>", .max_msgs_per_subject = 1})
          .ok());
  auto kv = common::KvBucket::Bind(*client, "plain_kv");
  REQUIRE(kv.ok());
  REQUIRE((*kv)->Put("a", "1").ok());
  REQUIRE((*kv)->Put("b", "2").ok());
  CheckSameAsGet(**kv, {"a", "b", "c"});
  auto many = (*kv)->GetMany({"b", "c"});
  REQUIRE(many[0].ok());
  REQUIRE(many[0]->has_value());
  CHECK((*many[0])->value == "2");
}

TEST_CASE("KV GetMany gathers its answers under the connection's own inbox prefix",
          "[integration][kv]") {
  TestStack stack({"nats"});
  auto client = testsupport::ConnectNats(stack);
  common::CommonConfig c;
  c.nats_urls = {stack.Env("NATS_URL")};
  c.nats_inbox_prefix = "_INBOX_kvtest";  // as a deployment sets it per user
  auto own = common::NatsClient::Connect(c, {});
  REQUIRE(own.ok());
  auto inbox = (*own)->NewInbox();
  REQUIRE(inbox.ok());
  CHECK(inbox->rfind("_INBOX_kvtest.", 0) == 0);
  REQUIRE(testsupport::AddRawStream(*client, {.name = "KV_direct_kv",
                                              .subject = "$KV.direct_kv.>",
                                              .max_msgs_per_subject = 1,
                                              .allow_direct = true})
              .ok());
  auto kv = common::KvBucket::Bind(**own, "direct_kv");
  REQUIRE(kv.ok());
  REQUIRE((*kv)->Put("a", "1").ok());
  CheckSameAsGet(**kv, {"a", "b"});
}

TEST_CASE("KV WriteMany puts and deletes in one round trip, each answered as Put or Delete is",
          "[integration][kv]") {
  TestStack stack({"nats"});
  auto client = testsupport::ConnectNats(stack);
  REQUIRE(testsupport::AddRawStream(*client, {.name = "KV_w_kv",
                                              .subject = "$KV.w_kv.>",
                                              .max_msgs_per_subject = 1,
                                              .allow_direct = true,
                                              .max_msg_size = 64})
              .ok());
  auto kv = common::KvBucket::Bind(*client, "w_kv");
  REQUIRE(kv.ok());
  REQUIRE((*kv)->Put("old", "x").ok());
  std::vector<common::KvWrite> writes;
  for (int i = 0; i < 50; ++i) writes.push_back({"k" + std::to_string(i), std::to_string(i)});
  writes.push_back({"old", "", true});
  writes.push_back({"big", std::string(200, 'b')});  // over the stream's max_msg_size
  writes.push_back({"bad..key", "v"});
  auto answers = (*kv)->WriteMany(writes);
  REQUIRE(answers.size() == writes.size());
  std::vector<uint64_t> revisions;
  for (int i = 0; i < 50; ++i) {
    INFO("k" << i << ": " << (answers[i].ok() ? std::string("ok") : answers[i].error().message));
    REQUIRE(answers[i].ok());
    auto got = (*kv)->Get("k" + std::to_string(i));
    REQUIRE(got.ok());
    REQUIRE(got->has_value());
    CHECK((*got)->value == std::to_string(i));
    CHECK((*got)->revision == *answers[i]);
    revisions.push_back(*answers[i]);
  }
  std::sort(revisions.begin(), revisions.end());
  CHECK(std::unique(revisions.begin(), revisions.end()) == revisions.end());
  REQUIRE(answers[50].ok());  // the delete: Get answers it absent, as after Delete()
  auto old = (*kv)->Get("old");
  REQUIRE(old.ok());
  CHECK_FALSE(old->has_value());
  // The stream's refusal keeps its err_code (judged by it, never by the words).
  REQUIRE_FALSE(answers[51].ok());
  CHECK(answers[51].error().code == common::js_error::kMessageTooLarge);
  CHECK(answers[51].error().kind == common::ErrorKind::kPermanent);
  CHECK(answers[51].error().message.find("w_kv/big") != std::string::npos);
  REQUIRE_FALSE(answers[52].ok());  // not sent
  CHECK(answers[52].error().kind == common::ErrorKind::kInvalid);
  CHECK((*kv)->WriteMany({}).empty());
  // No stream takes the subject any more: no responders, retryable, within the request timeout.
  REQUIRE(js_DeleteStream(client->js(), "KV_w_kv", nullptr, nullptr) == NATS_OK);
  auto gone = (*kv)->WriteMany({{"a", "1"}, {"b", "", true}});
  for (const auto& g : gone) {
    REQUIRE_FALSE(g.ok());
    CHECK(g.error().kind == common::ErrorKind::kRetryable);
  }
}

TEST_CASE(
    "crash-loop guard over a batch: markers read at once, each removed with the next one's write",
    "[integration][kv]") {
  TestStack stack({"nats"});
  auto client = testsupport::InitAndConnect(stack);
  auto kv = common::KvBucket::Bind(*client, common::topology::kCrashGuardBucket);
  REQUIRE(kv.ok());
  // Seq 12's reader, another process, stopped while reading it: its marker is there.
  const std::string stopped = common::crash_guard::Encode({2, 1, "other", "1@1", 0});
  REQUIRE((*kv)->Put(common::crash_guard::Key("d", 12), stopped).ok());
  auto guard = common::CrashGuard::Bind(*client, "d", "me");
  REQUIRE(guard->on());
  auto marker = [&](uint64_t seq) {
    auto got = (*kv)->Get(common::crash_guard::Key("d", seq));
    REQUIRE(got.ok());
    return got->has_value() ? std::optional<std::string>((*got)->value) : std::nullopt;
  };
  guard->Prefetch({{10, 1}, {11, 2}, {12, 3}, {13, 2}});
  auto first = guard->Before(10, 1);  // a first delivery: no marker
  CHECK_FALSE(first.marked);
  CHECK_FALSE(marker(10));
  auto v11 = guard->Before(11, 2);
  REQUIRE(v11.marked);
  CHECK(marker(11));
  guard->Done(v11, /*defer=*/true);
  CHECK(marker(11));  // deferred: goes out with the next write
  auto v12 = guard->Before(12, 3);
  REQUIRE(v12.marked);  // one stop counted, read again under a marker that says so
  CHECK_FALSE(marker(11));
  auto m12 = marker(12);
  REQUIRE(m12);
  auto decoded = common::crash_guard::Decode(*m12);
  REQUIRE(decoded);
  CHECK(decoded->stops == 1);
  CHECK(decoded->instance == "me");
  guard->Done(v12, /*defer=*/true);
  auto v13 = guard->Before(13, 2);
  REQUIRE(v13.marked);
  CHECK_FALSE(marker(12));
  guard->Done(v13, /*defer=*/true);
  CHECK(marker(13));
  guard->Flush();
  CHECK_FALSE(marker(13));
  // A deferred removal followed by a first delivery: removed before that one is read.
  auto v14 = guard->Before(14, 2);
  REQUIRE(v14.marked);
  guard->Done(v14, /*defer=*/true);
  CHECK_FALSE(guard->Before(15, 1).marked);
  CHECK_FALSE(marker(14));
  // The same message again right after (read, its removal deferred): removed, then marked anew.
  auto v20 = guard->Before(20, 2);
  REQUIRE(v20.marked);
  guard->Done(v20, /*defer=*/true);
  auto again = guard->Before(20, 3);
  REQUIRE(again.marked);
  auto m20 = marker(20);
  REQUIRE(m20);
  CHECK(common::crash_guard::Decode(*m20)->delivery == 3);
  guard->Done(again);
  CHECK_FALSE(marker(20));
}
