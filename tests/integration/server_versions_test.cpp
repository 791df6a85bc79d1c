// What newer nats-servers change, against real servers (docs/contract.md §1): init refuses a
// server below the supported range; every JetStream API request init and the services make is
// accepted by a strict server (2.12+: unknown fields refused); a pull consumer reads both
// ack-subject formats (2.14+ sends v2 with the js_ack_fc_v2 feature flag). The server is
// $NATS_SERVER_BIN (test_stack.h); what a version lacks is said in the test's output.
#include <nats/nats.h>

#include <catch2/catch.hpp>
#include <mutex>
#include <optional>
#include <string>

#include "common/config.h"
#include "common/nats_async.h"
#include "common/nats_client.h"
#include "common/nats_kv.h"
#include "common/nats_stream.h"
#include "common/server_probe.h"
#include "common/server_version.h"
#include "metricswriter/config.h"
#include "replayer/engine.h"
#include "tests/integration/nats_server_process.h"
#include "tests/support/test_stack.h"

using testsupport::BinaryDir;
using testsupport::Capture;
using testsupport::NatsServerProcess;
using testsupport::TempDir;
namespace sv = common::server_version;

namespace {

// "nats-server: v2.15.1" -> 2.15.1.
sv::Version BinaryVersion(const std::string& bin) {
  int rc = -1;
  std::string out = Capture("'" + bin + "' --version", &rc);
  REQUIRE(rc == 0);
  const size_t v = out.rfind(' ');
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  auto parsed = sv::Parse(out.substr(v == std::string::npos ? 0 : v + 1));
  INFO(out);
  REQUIRE(parsed);
  return *parsed;
}

bool AtLeast(const sv::Version& v, int major, int minor) {
  return !sv::Less(v, sv::Version{major, minor, 0, false, ""});
}

std::string Url(const NatsServerProcess& p) {
  return "nats://127.0.0.1:" + std::to_string(p.port());
}

std::string Platformctl(const std::string& url, const std::string& args, int* rc) {
  return Capture(
      "NATS_URL=" + url + " " + BinaryDir() + "/platformctl/platformctl " + args + " 2>&1", rc);
}

std::unique_ptr<common::NatsClient> Connect(const std::string& url) {
  common::CommonConfig config;
  config.nats_urls = {url};
  auto c = common::NatsClient::Connect(config, {});
  REQUIRE(c.ok());
  return std::move(*c);
}

std::string JetStream(const std::string& dir, const std::string& extra = "") {
  return "max_payload: 8MB\njetstream {\n  store_dir: \"" + dir + "/js\"\n" + extra + "}\n";
}

}  // namespace

TEST_CASE("init refuses a nats-server below 2.10.27 and names both versions",
          "[integration][versions]") {
  // Debian 12's own nats-server, 2.9.10 (scripts/install-deps keeps it beside the newer ones).
  const std::string old_bin = "/usr/sbin/nats-server";
  const sv::Version old = BinaryVersion(old_bin);
  INFO("the system's nats-server is " << old.text);
  REQUIRE_FALSE(sv::Supported(old));
  TempDir dir;
  NatsServerProcess server(dir.path(), "old", JetStream(dir.path()), old_bin);
  int rc = -1;
  std::string out = Platformctl(Url(server), "init", &rc);
  INFO(out);
  CHECK(rc != 0);
  CHECK_THAT(out, Catch::Contains("nats-server " + old.text + " at " + Url(server) +
                                  " is older than 2.10.27"));
  CHECK_THAT(out, Catch::Contains("docs/contract.md"));
  CHECK_THAT(out, Catch::Contains("nothing was read or changed"));
  // Nothing was created.
  auto client = Connect(Url(server));
  jsStreamInfo* si = nullptr;
  CHECK(js_GetStreamInfo(&si, client->js(), "WEB_EVENTS", nullptr, nullptr) == NATS_NOT_FOUND);
  jsStreamInfo_Destroy(si);
  // --dry-run is refused as well.
  out = Platformctl(Url(server), "init --dry-run", &rc);
  CHECK(rc != 0);
  CHECK_THAT(out, Catch::Contains("is older than 2.10.27"));
}

TEST_CASE("the version probe reads the connected server's version", "[integration][versions]") {
  const sv::Version want = BinaryVersion(testsupport::NatsServerBin());
  TempDir dir;
  NatsServerProcess server(dir.path(), "probe", JetStream(dir.path()));
  auto client = Connect(Url(server));
  auto got = common::ConnectedServerVersion(*client, std::chrono::milliseconds(5000));
  REQUIRE(got.ok());
  CHECK(got->text == want.text);
}

TEST_CASE("init and the services' consumers are accepted by a strict server",
          "[integration][versions]") {
  const sv::Version v = BinaryVersion(testsupport::NatsServerBin());
  // 2.12+ refuses unknown fields in API requests when strict (its default from 2.12; said here
  // so the test does not depend on it). Older servers have no such switch and refuse the key.
  const bool strict = AtLeast(v, 2, 12);
  if (!strict) {
    WARN("nats-server " << v.text
                        << " has no strict mode: this run proves only that init and "
                           "the consumers work, not that no request carries an unknown "
                           "field (run with a 2.12+ NATS_SERVER_BIN for that)");
  }
  TempDir dir;
  NatsServerProcess server(dir.path(), "strict",
                           JetStream(dir.path(), strict ? "  strict: true\n" : ""));
  int rc = -1;
  std::string out = Platformctl(Url(server), "init", &rc);
  INFO(out);
  REQUIRE(rc == 0);
  CHECK_THAT(out, Catch::Contains("nats-server " + v.text));
  out = Platformctl(Url(server), "init", &rc);  // reads every stream back, updates nothing
  CHECK(rc == 0);
  CHECK_THAT(out, Catch::Contains("no change"));

  // The durable consumers the services create on first bind, with their own settings.
  auto client = Connect(Url(server));
  common::ConfigReader empty(std::map<std::string, std::string>{});
  const common::ConsumerSpec specs[] = {replayer::ConsumerSpecFor(replayer::ReplayerConfig{}),
                                        mw::ReadWriterOptions(empty).consumer};
  for (const auto& spec : specs) {
    INFO(spec.stream << " " << spec.durable);
    auto consumer = common::PullConsumer::Bind(*client, spec);
    REQUIRE(consumer.ok());
    auto batch = (*consumer)->Fetch(10, common::Millis(200));  // a pull request, answered empty
    CHECK(batch.ok());
  }
  // The control: this server does refuse a request with a field it does not know.
  if (strict) {
    const char kBogus[] = R"({"name":"CTRL","subjects":["ctrl"],"no_such_field":1})";
    natsMsg* reply = nullptr;
    REQUIRE(natsConnection_RequestString(&reply, client->conn(), "$JS.API.STREAM.CREATE.CTRL",
                                         kBogus, 5000) == NATS_OK);
    const std::string answer(natsMsg_GetData(reply), natsMsg_GetDataLength(reply));
    natsMsg_Destroy(reply);
    INFO(answer);
    CHECK(answer.find("\"error\"") != std::string::npos);
    CHECK(answer.find("no_such_field") != std::string::npos);
  }
  // The server says so when it read a request leniently (2.12+ logs it even when not strict).
  const std::string log = testsupport::ReadFile(server.log_path());
  const size_t invalid = log.find("Invalid JetStream request");
  if (strict) {  // the control's, and only it
    CHECK(invalid != std::string::npos);
    CHECK(log.find("Invalid JetStream request", invalid + 1) == std::string::npos);
    CHECK(log.find("$JS.API.STREAM.CREATE.CTRL", invalid) != std::string::npos);
  } else {
    CHECK(invalid == std::string::npos);
  }
  if (strict) CHECK(log.find("Strict:          true") != std::string::npos);
}

TEST_CASE("a pull consumer reads both ack-subject formats", "[integration][versions]") {
  const sv::Version v = BinaryVersion(testsupport::NatsServerBin());
  const bool v2 = AtLeast(v, 2, 14);
  if (!v2) {
    WARN("nats-server " << v.text
                        << " sends only the v1 ack subject: the v2 half of this test "
                           "needs a 2.14+ NATS_SERVER_BIN");
  }
  for (int format : {1, 2}) {
    if (format == 2 && !v2) break;
    INFO("format " << format);
    TempDir dir;
    NatsServerProcess server(
        dir.path(), "acks",
        JetStream(dir.path()) + (format == 2 ? "feature_flags { js_ack_fc_v2: true }\n" : ""));
    auto client = Connect(Url(server));
    jsStreamConfig sc;
    jsStreamConfig_Init(&sc);
    sc.Name = "ACKS";
    const char* subjects[] = {"acks.>"};
    sc.Subjects = subjects;
    sc.SubjectsLen = 1;
    jsStreamInfo* si = nullptr;
    REQUIRE(js_AddStream(&si, client->js(), &sc, nullptr, nullptr) == NATS_OK);
    jsStreamInfo_Destroy(si);
    for (int i = 0; i < 3; ++i) {
      common::OutMessage m;
      m.subject = "acks.x";
      m.data = std::to_string(i);
      REQUIRE(common::PublishSync(*client, m).ok());
    }
    common::ConsumerSpec spec;
    spec.stream = "ACKS";
    spec.durable = "reader";
    spec.filter_subject = "acks.>";
    auto consumer = common::PullConsumer::Bind(*client, spec);
    REQUIRE(consumer.ok());
    auto batch = (*consumer)->Fetch(3, common::Millis(2000));
    REQUIRE(batch.ok());
    REQUIRE(batch->size() == 3);
    for (size_t i = 0; i < 3; ++i) {
      auto& m = (*batch)[i];
      CHECK(m.stream() == "ACKS");
      CHECK(m.stream_seq() == i + 1);
      CHECK(m.num_delivered() == 1);
      CHECK(m.timestamp_ns() > 0);
    }
    // The format really is the one under test: v2 carries the domain ("_") first.
    const std::string reply((*batch)[0].reply());
    INFO(reply);
    CHECK(reply.rfind(format == 2 ? "$JS.ACK._." : "$JS.ACK.ACKS.", 0) == 0);
    // A nak brings the first one back as delivery 2; acks on that subject are taken.
    REQUIRE((*batch)[0].Nak(common::Millis(0)).ok());
    for (size_t i = 1; i < 3; ++i) REQUIRE((*batch)[i].AckSync().ok());
    auto again = (*consumer)->Fetch(1, common::Millis(5000));
    REQUIRE(again.ok());
    REQUIRE(again->size() == 1);
    CHECK((*again)[0].stream_seq() == 1);
    CHECK((*again)[0].num_delivered() == 2);
    REQUIRE((*again)[0].AckSync().ok());
  }
}

namespace {

// Answers every message on its subject as a 2.11+ server answers a publish past a stream's
// ingest queue (server/stream.go, queueInbound).
void AnswerTooManyRequests(natsConnection* nc, natsSubscription*, natsMsg* msg, void*) {
  static const char kBusy[] =
      R"({"stream":"BUSY","seq":0,"error":{"code":429,"err_code":10167,"description":"too many requests"}})";
  if (const char* reply = natsMsg_GetReply(msg); reply != nullptr) {
    natsConnection_PublishString(nc, reply, kBusy);
  }
  natsMsg_Destroy(msg);
}

}  // namespace

TEST_CASE("a 429 answer to a publish is a retryable error with its code",
          "[integration][versions]") {
  TempDir dir;
  NatsServerProcess server(dir.path(), "busy", JetStream(dir.path()));
  auto client = Connect(Url(server));
  natsSubscription* sub = nullptr;
  REQUIRE(natsConnection_Subscribe(&sub, client->conn(), "busy.x", AnswerTooManyRequests,
                                   nullptr) == NATS_OK);
  REQUIRE(natsConnection_Flush(client->conn()) == NATS_OK);
  common::OutMessage m;
  m.subject = "busy.x";
  m.data = "x";
  // The synchronous publish (dead letters, queue move): nats.c hands over the err_code.
  auto sync = common::PublishSync(*client, m);
  REQUIRE_FALSE(sync.ok());
  INFO(sync.error().message);
  CHECK(sync.error().kind == common::ErrorKind::kRetryable);
  CHECK(sync.error().code == 10167);
  CHECK_FALSE(common::IsMessageTooLarge(sync.error()));
  // The asynchronous one (the replayer's guard records and dead letters).
  std::mutex mu;
  std::optional<common::Status> answer;
  auto publisher = common::AsyncPublisher::Create(*client, [&](uint64_t, const common::Status& s) {
    std::lock_guard lock(mu);
    answer = s;
  });
  REQUIRE(publisher.ok());
  REQUIRE((*publisher)->Publish(m, 1).ok());
  REQUIRE(testsupport::WaitFor(
      [&] {
        std::lock_guard lock(mu);
        return answer.has_value();
      },
      10'000));
  publisher->reset();  // no completion comes after this
  REQUIRE_FALSE(answer->ok());
  INFO(answer->error().message);
  CHECK(answer->error().kind == common::ErrorKind::kRetryable);
  CHECK(answer->error().code == 10167);
  common::DestroySubscription(*client, sub, /*quiesce=*/true);
}

TEST_CASE("KV writes keep JetStream's err_code and create over a delete marker",
          "[integration][versions]") {
  TempDir dir;
  NatsServerProcess server(dir.path(), "kv", JetStream(dir.path()));
  auto client = Connect(Url(server));
  kvConfig kc;
  kvConfig_Init(&kc);
  kc.Bucket = "kvt";
  kc.History = 1;
  kvStore* raw = nullptr;
  REQUIRE(js_CreateKeyValue(&raw, client->js(), &kc) == NATS_OK);
  kvStore_Destroy(raw);
  auto bucket = common::KvBucket::Bind(*client, "kvt");
  REQUIRE(bucket.ok());
  auto& kv = **bucket;

  auto created = kv.Create("lease", "a");
  REQUIRE(created.ok());
  auto again = kv.Create("lease", "b");  // the key holds a value
  REQUIRE_FALSE(again.ok());
  CHECK(again.error().kind == common::ErrorKind::kPermanent);
  CHECK(again.error().code == 10071);  // wrong last sequence
  auto renewed = kv.Update("lease", "a2", *created);
  REQUIRE(renewed.ok());
  CHECK(*renewed > *created);
  auto stale = kv.Update("lease", "a3", *created);
  REQUIRE_FALSE(stale.ok());
  CHECK(stale.error().code == 10071);
  auto got = kv.Get("lease");
  REQUIRE(got.ok());
  REQUIRE(got->has_value());
  CHECK((*got)->value == "a2");

  // A released lease leaves a delete marker: a create writes over it.
  REQUIRE(kv.Delete("lease").ok());
  got = kv.Get("lease");
  REQUIRE(got.ok());
  CHECK_FALSE(got->has_value());
  auto taken = kv.Create("lease", "c");
  REQUIRE(taken.ok());
  got = kv.Get("lease");
  REQUIRE(got.ok());
  REQUIRE(got->has_value());
  CHECK((*got)->value == "c");

  auto put = kv.Put("marker.1", "x");
  REQUIRE(put.ok());
  auto bad = kv.Put("bad..key", "x");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().kind == common::ErrorKind::kInvalid);
}
