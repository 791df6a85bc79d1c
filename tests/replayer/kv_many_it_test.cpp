// KvBucket::GetMany (the replayer's batched duplicate-guard and visit-state reads) against a
// real nats-server: the same answers as one Get per key, for present, absent and deleted keys,
// and for a bucket without direct gets.

#include <catch2/catch.hpp>
#include <string>
#include <vector>

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
