// Storage limits (docs/contract.md §2) against a real nats-server whose account has JetStream
// limits as the nats role renders them: platformctl init fits the streams and buckets in the
// account, a full work queue refuses its publisher and loses nothing, the buckets keep taking
// writes, and the queue takes messages again once some are consumed.
#include <nats/nats.h>
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "common/nats_client.h"
#include "common/nats_kv.h"
#include "common/nats_stream.h"
#include "common/topology.h"
#include "tests/integration/nats_server_process.h"
#include "tests/support/test_stack.h"

using testsupport::Capture;
using testsupport::NatsServerProcess;
using testsupport::TempDir;

namespace {

constexpr int64_t kKiB = 1024, kMiB = 1024 * 1024;
// What init gets: WEB_EVENTS small enough to fill at once, the others 1 MiB.
const std::string kLimits =
    "WEB_EVENTS_MAX_BYTES=256KiB API_METRICS_MAX_BYTES=1MiB WEB_DLQ_MAX_BYTES=1MiB "
    "API_DLQ_MAX_BYTES=1MiB VISIT_STATE_MAX_BYTES=1MiB STORED_IDS_MAX_BYTES=1MiB";
constexpr int64_t kReserved = 256 * kKiB + 5 * kMiB + common::topology::kLocksMaxBytes +
                              common::topology::kCrashGuardMaxBytes +
                              common::topology::kDlqTasksMaxBytes;

std::string Config(const std::string& dir) {
  // The account holds what the limits reserve and 1 MiB more; every stream must have a limit.
  return "jetstream { store_dir: \"" + dir +
         "/js\", max_file_store: 1GB, max_memory_store: 64MB }\n" +
         "accounts { CORE { jetstream { max_file: " + std::to_string(kReserved + kMiB) +
         ", max_mem: 16MB, max_bytes_required: true }\n" +
         "  users: [{user: core, password: core-pw}] } }\n";
}

std::string Ctl(int port, const std::string& env, const std::string& args, int* rc) {
  return Capture("NATS_URL=nats://127.0.0.1:" + std::to_string(port) +
                     " NATS_USER=core NATS_PASSWORD=core-pw " + env + " " +
                     testsupport::BinaryDir() + "/platformctl/platformctl " + args + " 2>&1",
                 rc);
}

nlohmann::json WebEvents(int port) {
  int rc = -1;
  auto out = Ctl(port, "", "streams --interval 0 --stream WEB_EVENTS --json", &rc);
  INFO(out);
  REQUIRE(rc == 0);
  auto doc = nlohmann::json::parse(out);
  return doc["streams"].at(0);
}

common::OutMessage Event(int i) {
  common::OutMessage m;
  m.subject = "web.events.site-1";
  m.msg_id = "fill-" + std::to_string(i);
  m.data = std::string(300, 'e');  // about 400 bytes stored with subject and headers
  return m;
}

}  // namespace

TEST_CASE("a full work queue refuses the edge, keeps what it holds, and the buckets keep room",
          "[integration][platformctl][limits]") {
  TempDir dir;
  NatsServerProcess server(dir.path(), "limits", Config(dir.path()));
  int rc = -1;
  std::string out = Ctl(server.port(), kLimits, "init", &rc);
  INFO(out);
  REQUIRE(rc == 0);
  CHECK_THAT(out, Catch::Contains("storage limits reserve " + std::to_string(kReserved)));
  CHECK_THAT(out, Catch::Contains("KV crash_guard: created"));

  common::CommonConfig c;
  c.nats_urls = {"nats://127.0.0.1:" + std::to_string(server.port())};
  c.nats_user = "core";
  c.nats_password = "core-pw";
  auto client = common::NatsClient::Connect(c, {});
  REQUIRE(client.ok());

  // Fill WEB_EVENTS until it refuses: the publisher is told why, with JetStream's code.
  int stored = 0;
  std::string refusal;
  for (int i = 0; i < 2000 && refusal.empty(); ++i) {
    auto r = common::PublishSync(**client, Event(i));
    if (r.ok()) {
      ++stored;
    } else {
      refusal = r.error().message;
    }
  }
  INFO(refusal);
  CHECK(stored > 100);
  CHECK_THAT(refusal, Catch::Contains("maximum bytes exceeded"));
  CHECK_THAT(refusal, Catch::Contains("10077"));
  // Refused again, and nothing stored was dropped to make room (discard new).
  CHECK_FALSE(common::PublishSync(**client, Event(5000)).ok());
  auto web = WebEvents(server.port());
  CHECK(web["messages"] == stored);
  CHECK(web["first_seq"] == 1);
  CHECK(web["bytes"].get<int64_t>() <= 256 * kKiB);

  // The buckets have their own room: a lease and a crash-loop marker are still written.
  auto locks = common::KvBucket::Bind(**client, "locks");
  REQUIRE(locks.ok());
  CHECK((*locks)->Put("replayer", "instance a").ok());
  CHECK((*locks)->Put("replayer", "instance a renewed").ok());
  auto guard = common::KvBucket::Bind(**client, "crash_guard");
  REQUIRE(guard.ok());
  CHECK((*guard)->Put("replayer.1", "1 0 a").ok());

  // A stream without a limit cannot be added to the account (max_bytes_required), so nothing
  // unlimited can take the buckets' room.
  jsStreamConfig sc;
  jsStreamConfig_Init(&sc);
  sc.Name = "OTHER";
  const char* subjects[] = {"other.>"};
  sc.Subjects = subjects;
  sc.SubjectsLen = 1;
  sc.Storage = js_FileStorage;
  jsStreamInfo* si = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  CHECK(js_AddStream(&si, (*client)->js(), &sc, nullptr, &jerr) != NATS_OK);
  jsStreamInfo_Destroy(si);
  // A limit beyond the account's room is refused too, and init says what to look at.
  out = Ctl(server.port(), kLimits + " WEB_EVENTS_MAX_BYTES=1GiB", "init", &rc);
  CHECK(rc == 1);
  CHECK_THAT(out, Catch::Contains("WEB_EVENTS: FAILED"));
  CHECK_THAT(out, Catch::Contains("JetStream storage is smaller than the limits above reserve"));

  // A limit below what the stream holds would make JetStream delete its oldest messages: init
  // leaves the stream as it is and says why.
  out = Ctl(server.port(), kLimits + " WEB_EVENTS_MAX_BYTES=64KiB", "init", &rc);
  CHECK(rc == 1);
  CHECK_THAT(out, Catch::Contains("WEB_EVENTS: CONFLICT, left as it is: max bytes 64KiB is below "
                                  "the"));
  CHECK_THAT(out, Catch::Contains("JetStream would delete its oldest messages"));
  CHECK(WebEvents(server.port())["messages"] == stored);

  // Draining: consumed messages make room, and the edge publishes again.
  common::ConsumerSpec spec;
  spec.stream = "WEB_EVENTS";
  spec.durable = "replayer";
  spec.filter_subject = "web.events.*";
  auto consumer = common::PullConsumer::Bind(**client, spec);
  REQUIRE(consumer.ok());
  auto batch = (*consumer)->Fetch(50, std::chrono::seconds(5));
  REQUIRE(batch.ok());
  REQUIRE(batch->size() == 50);
  for (auto& m : *batch) REQUIRE(m.AckSync().ok());
  auto again = common::PublishSync(**client, Event(6000));
  INFO((again.ok() ? std::string("stored") : again.error().message));
  CHECK(again.ok());
  CHECK(WebEvents(server.port())["messages"] == stored - 50 + 1);
}
