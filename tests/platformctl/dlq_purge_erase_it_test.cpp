// platformctl dlq purge and platformctl erase against a real nats-server with a file store:
// purged messages' bytes are gone from the store directory (secure erase), kept ones are there;
// erasure by site, visitor and tenant erases exactly the matching messages; an erase whose
// answer was lost and whose retry is refused counts as erased once the stream no longer holds it.
#include <nats/nats.h>

#include <catch2/catch.hpp>

#include <set>

#include <nlohmann/json.hpp>

#include "platformctl/dlq/nats.h"
#include "tests/platformctl/dlq_fixture.h"

using dlqtest::Ctl;
using dlqtest::Seed;
using testsupport::TestStack;

namespace {

// Whether `text` occurs in any file under the stack's JetStream store.
bool OnDisk(const TestStack& stack, const std::string& text) {
  return testsupport::Run("grep -rqa -- '" + text + "' " + stack.dir() + "/nats") == 0;
}

std::set<uint64_t> SeqsOf(common::NatsClient& client, const std::string& stream) {
  std::set<uint64_t> out;
  for (const auto& h : dlqtest::ReadAll(client, stream)) out.insert(h.seq);
  return out;
}

}  // namespace

TEST_CASE("dlq purge erases the stored bytes of the selection only", "[integration][dlq]") {
  TestStack stack({"nats"});
  dlqtest::Init(stack);
  auto client = testsupport::ConnectNats(stack);
  // seq 1..20: site-p, to purge; 21..25: site-k, kept; 26: deleted the plain way (control).
  std::vector<common::OutMessage> msgs;
  for (int i = 1; i <= 26; ++i) {
    Seed s;
    s.key = i <= 20 ? "site-p" : "site-k";
    s.visitor = "v";
    s.reason = "not valid JSON";
    s.origin_seq = static_cast<uint64_t>(i);
    s.marker = (i <= 20   ? "PURGED-MARK-"
                : i <= 25 ? "KEPT-MARK-"
                          : "PLAIN-DELETE-MARK-") +
               std::to_string(i) + "-";
    if (i == 26) s.key = "site-d";
    msgs.push_back(dlqtest::DeadLetter(s));
  }
  dlqtest::PublishAll(*client, msgs);
  // The store has the bytes before anything is erased (else the check below proves nothing).
  REQUIRE(testsupport::WaitFor([&] { return OnDisk(stack, "PURGED-MARK-7-"); }, 10'000));
  REQUIRE(OnDisk(stack, "PLAIN-DELETE-MARK-26-"));

  // Without --yes: says what it would do, erases nothing, exit 4.
  auto r = Ctl(stack, "dlq purge --queue web --key site-p");
  INFO(r.out << r.err);
  CHECK(r.rc == 4);
  CHECK_THAT(r.out, Catch::Contains("would purge"));
  CHECK_THAT(r.out, Catch::Contains("WEB_DLQ: 20 messages selected"));
  CHECK_THAT(r.out, Catch::Contains("--yes"));
  CHECK(dlqtest::Count(*client, "WEB_DLQ") == 26);

  r = Ctl(stack, "dlq purge --queue web --key site-p --yes --json");
  INFO(r.out << r.err);
  CHECK(r.rc == 0);
  auto doc = nlohmann::json::parse(r.out);
  CHECK(doc["erased"] == 20);
  CHECK(doc["failed"] == 0);
  CHECK(doc["complete"] == true);
  // One server, one replica: its block file is the only copy; no raft log.
  CHECK(doc["erasure"]["raft"] == false);
  CHECK(doc["erasure"]["replicas_ok"] == true);
  CHECK(doc["erasure"]["erased_seqs"] == "1-20");
  CHECK(doc["erasure"]["verify_command"] == "platformctl dlq verify --queue web --seqs 1-20");
  CHECK(SeqsOf(*client, "WEB_DLQ") == std::set<uint64_t>{21, 22, 23, 24, 25, 26});
  r = Ctl(stack, "dlq verify --queue web --seqs 1-20");
  INFO(r.out << r.err);
  CHECK(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("none of them is stored"));
  r = Ctl(stack, "dlq verify --queue web --seqs 19-21 --json");
  INFO(r.out << r.err);
  CHECK(r.rc == 1);
  auto v = nlohmann::json::parse(r.out);
  CHECK(v["verified"] == false);
  CHECK(v["replicas"][0]["stored_seqs"] == std::vector<int>{21});
  CHECK(Ctl(stack, "dlq verify --queue web --seqs 3-1").rc == 2);

  // The control: a plain delete leaves the bytes in the block file.
  REQUIRE(js_DeleteMsg(client->js(), "WEB_DLQ", 26, nullptr, nullptr) == NATS_OK);
  // Let the server write out what it buffers, then look at every file of the store.
  REQUIRE(testsupport::WaitFor([&] { return OnDisk(stack, "KEPT-MARK-25-"); }, 10'000));
  for (int i = 1; i <= 20; ++i) {
    INFO("purged message " << i);
    CHECK_FALSE(OnDisk(stack, "PURGED-MARK-" + std::to_string(i) + "-"));
  }
  for (int i = 21; i <= 25; ++i) CHECK(OnDisk(stack, "KEPT-MARK-" + std::to_string(i) + "-"));
  CHECK(OnDisk(stack, "PLAIN-DELETE-MARK-26-"));

  // Purging again selects nothing; a purge by reason and seq range combines.
  r = Ctl(stack, "dlq purge --queue web --key site-p --yes");
  CHECK(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("erased: 0"));
  r = Ctl(stack, "dlq purge --queue web --reason json --from 22 --to 23 --yes");
  CHECK(r.rc == 0);
  CHECK(SeqsOf(*client, "WEB_DLQ") == std::set<uint64_t>{21, 24, 25});
  CHECK_THAT(dlqtest::AllOutput(), !Catch::Contains("MARK-"));
}

TEST_CASE("dlq erase removes exactly a site's, a visitor's or a tenant's DLQ messages",
          "[integration][dlq]") {
  TestStack stack({"nats"});
  dlqtest::Init(stack);
  auto client = testsupport::ConnectNats(stack);
  auto web = [](const std::string& site, const std::string& visitor, int i) {
    Seed s;
    s.key = site;
    s.visitor = visitor;
    s.reason = "no usable visitor key";
    s.origin_seq = static_cast<uint64_t>(i);
    return s;
  };
  std::vector<Seed> seeds = {
      web("site-x", "v1", 1),  // 1
      web("site-x", "v2", 2),  // 2
      web("site-x", "v1", 3),  // 3
      web("site-y", "v1", 4),  // 4: same visitor key, other site
      web("site-x", "v2", 5),  // 5
      web("site-x", "v1", 6),  // 6
      web("site-y", "v3", 7),  // 7
  };
  Seed invalid = web("bad key", "v1", 8);  // 8: under dlq.web._invalid, event of site-x
  invalid.website = "site-x";
  seeds.push_back(invalid);
  Seed garbled = web("site-x", "", 9);  // 9: site-x, not JSON
  garbled.raw_payload = std::string("{not json ") + dlqtest::kMarker;
  seeds.push_back(garbled);
  std::vector<common::OutMessage> msgs;
  for (const auto& s : seeds) msgs.push_back(dlqtest::DeadLetter(s));
  for (int i = 0; i < 5; ++i) {
    Seed s;
    s.web = false;
    s.key = i < 3 ? "t1" : "t2";
    s.reason = "cannot decode";
    s.origin_seq = static_cast<uint64_t>(100 + i);
    msgs.push_back(dlqtest::DeadLetter(s));
  }
  dlqtest::PublishAll(*client, msgs);
  REQUIRE(dlqtest::Count(*client, "WEB_DLQ") == 9);

  // A visitor: the site's events with that key (the _invalid one names the site in its body);
  // the unreadable one of the site is kept and reported (exit 1).
  auto r = Ctl(stack, "erase --site site-x --visitor v1");
  INFO(r.out << r.err);
  CHECK(r.rc == 1);
  CHECK_THAT(r.out, Catch::Contains("erase site site-x, visitor v1: 4 messages of WEB_DLQ erased"));
  CHECK_THAT(r.out, Catch::Contains("not JSON, so its visitor is unknown"));
  CHECK_THAT(r.out, Catch::Contains("WEB_EVENTS"));
  CHECK(SeqsOf(*client, "WEB_DLQ") == std::set<uint64_t>{2, 4, 5, 7, 9});

  // A site: all of it, other sites untouched.
  r = Ctl(stack, "erase --site site-y --json");
  INFO(r.out << r.err);
  CHECK(r.rc == 0);
  auto doc = nlohmann::json::parse(r.out);
  CHECK(doc["erased"] == 2);
  CHECK_THAT(doc["note"].get<std::string>(), Catch::Contains("downstream erasure"));
  CHECK(SeqsOf(*client, "WEB_DLQ") == std::set<uint64_t>{2, 5, 9});
  r = Ctl(stack, "erase --site site-x");
  CHECK(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("3 messages of WEB_DLQ erased"));
  CHECK(dlqtest::Count(*client, "WEB_DLQ") == 0);

  // A tenant.
  r = Ctl(stack, "erase --tenant t1");
  INFO(r.out << r.err);
  CHECK(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("erase tenant t1: 3 messages of API_DLQ erased"));
  CHECK(SeqsOf(*client, "API_DLQ") == std::set<uint64_t>{4, 5});
  r = Ctl(stack, "erase --tenant nobody");
  CHECK(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("0 messages of API_DLQ erased"));
  CHECK(dlqtest::Count(*client, "API_DLQ") == 2);
  CHECK_THAT(dlqtest::AllOutput(), !Catch::Contains(dlqtest::kMarker));
}

TEST_CASE("an erase whose answer came too late is erased, not failed, when its retry is refused",
          "[integration][dlq]") {
  // The answers a DLQ leader change loses, made by a wait of 5 ms for 200 erases: most answers
  // come after it (about 5 sends per message here), so the requests are sent again and refused
  // because the first send erased them: 10057 below the stream's first sequence (seq 1), 10043
  // inside it (every other one, the even ones kept). Each is read back: gone, so erased (before,
  // counted failed: a redrive task reported moved messages as failed).
  TestStack stack({"nats"});
  dlqtest::Init(stack);
  auto client = testsupport::ConnectNats(stack);
  dlqtest::SeedWeb(*client, 400, "late");
  std::vector<uint64_t> seqs;
  std::set<uint64_t> kept;
  for (uint64_t seq = 1; seq <= 400; ++seq) {
    if (seq % 2 == 1) {
      seqs.push_back(seq);
    } else {
      kept.insert(seq);
    }
  }
  // Every erase request sent, counted: more than one per message is the retries this is about.
  natsSubscription* sent = nullptr;
  REQUIRE(natsConnection_SubscribeSync(&sent, client->conn(),
                                       "$JS.API.STREAM.MSG.DELETE.WEB_DLQ") == NATS_OK);
  auto results = platformctl::nats_dlq::EraseAll(*client, "WEB_DLQ", seqs, common::Millis(5));
  REQUIRE(natsConnection_Flush(client->conn()) == NATS_OK);
  int requests = 0;
  REQUIRE(natsSubscription_GetPending(sent, &requests, nullptr) == NATS_OK);
  natsSubscription_Destroy(sent);
  INFO("erase requests sent: " << requests << " for " << seqs.size() << " messages");
  CHECK(requests > static_cast<int>(seqs.size()));  // else this test proves nothing
  REQUIRE(results.size() == seqs.size());
  for (size_t i = 0; i < seqs.size(); ++i) {
    INFO("seq " << seqs[i] << ": " << (results[i] ? "" : results[i].error().message));
    CHECK(results[i].ok());
  }
  CHECK(SeqsOf(*client, "WEB_DLQ") == kept);
}
