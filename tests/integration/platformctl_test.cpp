// platformctl init and streams against a real nats-server with JetStream.
#include <nats/nats.h>
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "common/nats_client.h"
#include "common/nats_kv.h"
#include "common/nats_stream.h"
#include "tests/support/nats_cluster.h"
#include "tests/support/test_stack.h"

using testsupport::Capture;
using testsupport::TestStack;

namespace {

std::string Ctl(const TestStack& stack, const std::string& args, int* rc) {
  return Capture("NATS_URL=" + stack.Env("NATS_URL") + " " + testsupport::BinaryDir() +
                     "/platformctl/platformctl " + args + " 2>&1",
                 rc);
}

const nlohmann::json& Stream(const nlohmann::json& doc, const std::string& name) {
  for (const auto& s : doc["streams"]) {
    if (s["name"] == name) return s;
  }
  FAIL("no stream " << name << " in " << doc.dump());
  return doc;
}

}  // namespace

TEST_CASE("init provisions once and a second run changes nothing", "[integration][platformctl]") {
  TestStack stack({"nats"});
  int rc = -1;
  std::string first = Ctl(stack, "init", &rc);
  INFO(first);
  CHECK(rc == 0);
  for (const char* name :
       {"WEB_EVENTS: created", "API_METRICS: created", "WEB_DLQ: created", "API_DLQ: created",
        "KV locks: created", "KV visit_state: created", "KV replayer_stored: created",
        "KV dlq_tasks: created", "KV crash_guard: created"}) {
    CHECK_THAT(first, Catch::Contains(name));
  }
  std::string second = Ctl(stack, "init", &rc);
  INFO(second);
  CHECK(rc == 0);
  CHECK_THAT(second, Catch::Contains("no change"));
  CHECK_THAT(second, !Catch::Contains("created"));
  CHECK_THAT(second, !Catch::Contains("updated"));

  // A changed setting is applied in place and reported.
  std::string third = Capture("WEB_EVENTS_MAX_AGE=90h NATS_URL=" + stack.Env("NATS_URL") + " " +
                                  testsupport::BinaryDir() + "/platformctl/platformctl init",
                              &rc);
  INFO(third);
  CHECK(rc == 0);
  CHECK_THAT(third, Catch::Contains("WEB_EVENTS: updated: max age 3d -> 90h"));
}

TEST_CASE("init reports a conflicting stream and leaves it alone", "[integration][platformctl]") {
  TestStack stack({"nats"});
  auto client = testsupport::ConnectNats(stack);
  // Someone created WEB_EVENTS by hand, with limits retention, and it holds a message.
  REQUIRE(
      testsupport::AddRawStream(*client, {.name = "WEB_EVENTS", .subject = "web.events.*"}).ok());
  common::OutMessage m;
  m.subject = "web.events.site";
  m.data = "precious";
  REQUIRE(common::PublishSync(*client, m).ok());

  int rc = -1;
  std::string out = Ctl(stack, "init", &rc);
  INFO(out);
  CHECK(rc == 1);
  CHECK_THAT(out,
             Catch::Contains(
                 "WEB_EVENTS: CONFLICT, left as it is: retention is limits, expected work queue"));
  CHECK_THAT(out, Catch::Contains("API_METRICS: created"));
  CHECK_THAT(out, Catch::Contains("init incomplete"));
  // Not recreated: the message is still there.
  jsStreamInfo* si = nullptr;
  REQUIRE(js_GetStreamInfo(&si, client->js(), "WEB_EVENTS", nullptr, nullptr) == NATS_OK);
  CHECK(si->State.Msgs == 1);
  CHECK(si->Config->Retention == js_LimitsPolicy);
  jsStreamInfo_Destroy(si);
}

TEST_CASE("streams keeps pending and unacked apart", "[integration][platformctl]") {
  TestStack stack({"nats"});
  int rc = -1;
  REQUIRE(Capture("NATS_URL=" + stack.Env("NATS_URL") + " " + testsupport::BinaryDir() +
                      "/platformctl/platformctl init",
                  &rc) != "");
  REQUIRE(rc == 0);
  auto client = testsupport::ConnectNats(stack);
  constexpr int kN = 3000;
  constexpr int kM = 1000;
  for (int i = 0; i < kN; ++i) {
    common::OutMessage m;
    m.subject = "web.events.site-" + std::to_string(i % 3);
    m.data = std::string(100, 'x');
    m.msg_id = "id-" + std::to_string(i);
    REQUIRE(common::PublishSync(*client, m).ok());
  }
  common::ConsumerSpec spec;
  spec.stream = "WEB_EVENTS";
  spec.durable = "replayer";
  spec.filter_subject = "web.events.*";
  spec.max_ack_pending = 2000;
  auto consumer = common::PullConsumer::Bind(*client, spec);
  if (!consumer) FAIL(consumer.error().message);
  std::vector<common::Message> held;  // fetched and never acked
  while (static_cast<int>(held.size()) < kM) {
    auto batch =
        (*consumer)->Fetch(std::min(100, kM - static_cast<int>(held.size())), common::Millis(2000));
    REQUIRE(batch.ok());
    for (auto& m : *batch) held.push_back(std::move(m));
  }
  REQUIRE(held.size() == kM);

  std::string out = Ctl(stack, "streams --json --interval 0", &rc);
  INFO(out);
  REQUIRE(rc == 0);
  auto doc = nlohmann::json::parse(out);
  const auto& web = Stream(doc, "WEB_EVENTS");
  CHECK(web["messages"] == kN);
  CHECK(web["bytes"].get<uint64_t>() > kN * 100u);
  CHECK(web["oldest_ts"].is_string());
  CHECK(web["oldest_age_seconds"].get<double>() >= 0);
  REQUIRE(web["consumers"].size() == 1);
  const auto& c = web["consumers"][0];
  CHECK(c["name"] == "replayer");
  CHECK(c["pending"] == kN - kM);
  CHECK(c["unacked"] == kM);
  CHECK(c["redelivered"] == 0);
  const auto& dlq = Stream(doc, "WEB_DLQ");
  CHECK(dlq["messages"] == 0);
  CHECK(dlq["oldest_ts"].is_null());

  // Ack half of what is held; with two readings the rates show the drain.
  for (int i = 0; i < kM / 2; ++i) REQUIRE(held[i].AckSync().ok());
  out = Ctl(stack, "streams --json --interval 300ms --stream WEB_EVENTS", &rc);
  INFO(out);
  REQUIRE(rc == 0);
  doc = nlohmann::json::parse(out);
  REQUIRE(doc["streams"].size() == 1);
  const auto& web2 = doc["streams"][0];
  CHECK(web2["messages"] == kN - kM / 2);
  CHECK(web2["consumers"][0]["unacked"] == kM / 2);
  CHECK(web2["consumers"][0]["pending"] == kN - kM);
  CHECK(web2["in_rate"] == 0.0);
  CHECK(doc["interval_seconds"].is_number());
  CHECK(doc["interval_seconds"].get<double>() >= 0.3);

  // The text form shows the same numbers to a person.
  out = Ctl(stack, "streams --interval 0 --stream WEB_EVENTS", &rc);
  INFO(out);
  CHECK_THAT(out, Catch::Contains("pending 2000  unacked 500/2000"));
}

TEST_CASE("usage and connection errors have their exit codes", "[integration][platformctl]") {
  int rc = -1;
  std::string out =
      Capture(testsupport::BinaryDir() + "/platformctl/platformctl nonsense 2>&1", &rc);
  CHECK(rc == 2);
  out = Capture("LOG_LEVEL=loud " + testsupport::BinaryDir() + "/platformctl/platformctl init 2>&1",
                &rc);
  CHECK(rc == 2);
  CHECK_THAT(out, Catch::Contains("LOG_LEVEL: 'loud'"));
  int port = testsupport::FreePortRange(1);
  out = Capture("NATS_URL=nats://127.0.0.1:" + std::to_string(port) + " " +
                    testsupport::BinaryDir() + "/platformctl/platformctl streams 2>&1",
                &rc);
  CHECK(rc == 3);
  CHECK_THAT(out, Catch::Contains("connect to NATS"));
}

// Issue 35: a bucket as nats.c creates it allows rollup headers, and a user allowed to write
// one key (a service, its own lease) emptied the whole bucket with one publish carrying
// Nats-Rollup: all. init provisions every stream and bucket with rollup headers refused.
TEST_CASE("a publish with a rollup header is refused by every bucket and stream",
          "[integration][platformctl]") {
  TestStack stack({"nats"});
  int rc = -1;
  std::string out = Ctl(stack, "init", &rc);
  INFO(out);
  REQUIRE(rc == 0);
  common::CommonConfig c;
  c.nats_urls = {stack.Env("NATS_URL")};
  common::NatsClient::Options o;
  o.client_name = "rollup-test";
  auto client = common::NatsClient::Connect(c, o);
  REQUIRE(client.ok());
  auto locks = common::KvBucket::Bind(**client, "locks");
  REQUIRE(locks.ok());
  REQUIRE((*locks)->Put("metricswriter", "held").ok());
  for (const char* subject : {"$KV.locks.replayer", "$KV.visit_state.x", "$KV.replayer_stored.x",
                              "$KV.dlq_tasks.x", "$KV.crash_guard.replayer.1", "web.events.site",
                              "api.metrics.tenant", "dlq.web.site", "dlq.api.tenant"}) {
    common::OutMessage m;
    m.subject = subject;
    m.data = "x";
    m.headers = {{"Nats-Rollup", "all"}};
    auto r = common::PublishSync(**client, m);
    INFO(subject);
    CHECK_FALSE(r.ok());
  }
  auto held = (*locks)->Get("metricswriter");
  REQUIRE(held.ok());
  REQUIRE(held->has_value());
  CHECK((*held)->value == "held");
}
