// The crash-loop guard (common/crash_guard.h) in the replayer, against a real nats-server and a
// stand-in Umami. The earlier readers are played by the test: it takes the first deliveries of
// the events from the replayer's durable consumer and leaves a marker for one of them.
// - An event two readers stopped on while parsing it (its marker counts one stop before the
//   last) is dead-lettered with the guard's reason at delivery 4 and never sent; a redelivered
//   event without a marker is parsed under one and stored, and its marker removed.
// - An event one reader stopped on (killed from outside, say, between the marker's write and
//   delete) is read again under a marker counting that stop, stored, and the marker removed.
#include <nats/nats.h>
#include <catch2/catch.hpp>

#include "common/config.h"
#include "common/crash_guard.h"
#include "common/dead_letter.h"
#include "common/nats_kv.h"
#include "common/nats_stream.h"
#include "replayer/engine.h"
#include "tests/replayer/fixture.h"
#include "tests/support/nats_cluster.h"
#include "tests/support/umami_standin.h"

using replayer_test::Fixture;
using testsupport::TestEvent;

namespace {
// Sa-Dlq-Detail of every WEB_DLQ message, in order.
std::vector<std::string> DlqDetails(Fixture& f) {
  std::vector<std::string> out;
  auto r = f.Read("WEB_DLQ");
  for (uint64_t seq = r.first_seq; r.messages > 0 && seq <= r.last_seq; ++seq) {
    natsMsg* msg = nullptr;
    if (js_GetMsg(&msg, f.client->js(), "WEB_DLQ", seq, nullptr, nullptr) != NATS_OK) continue;
    const char* detail = nullptr;
    natsMsgHeader_Get(msg, common::dead_letter::kDetail, &detail);
    out.push_back(detail ? detail : "");
    natsMsg_Destroy(msg);
  }
  return out;
}

void PublishEvent(Fixture& f, const std::string& id) {
  TestEvent e;
  e.site = f.sites[0];
  e.id = id;
  e.url = "/" + id;
  REQUIRE(testsupport::PublishRaw(*f.client, "web.events." + e.site,
                                  testsupport::EventJson(e, 1'764'000'000'000), e.id));
}

// The replayer's own consumer, as it would create it (nats.c binds only an identical one).
common::ConsumerSpec ReplayerSpec() {
  common::ConfigReader env(std::map<std::string, std::string>{{"REPLAYER_ACK_WAIT", "3s"}});
  return replayer::ConsumerSpecFor(replayer::ReadReplayerConfig(env));
}
}  // namespace

TEST_CASE("an event two readers died on is dead-lettered, not sent", "[integration][replayer]") {
  Fixture f(0, 1);
  testsupport::UmamiStandIn umami(f.sites);
  PublishEvent(f, "died-on");
  PublishEvent(f, "redelivered");
  const uint64_t died_on_seq =
      testsupport::DieReading(*f.client, ReplayerSpec(), 2, 3, "died-on", "core-2", 1);
  REQUIRE(died_on_seq != 0);
  auto bucket = common::KvBucket::Bind(*f.client, "crash_guard");
  REQUIRE(bucket.ok());

  f.StartReplayer({{"UMAMI_URLS", umami.url()}, {"REPLAYER_ACK_WAIT", "3s"}});
  REQUIRE(f.WaitDrained(60'000));
  const auto stored = umami.StoredEvents();
  REQUIRE(stored.size() == 1);
  CHECK(stored[0].url == "/redelivered");
  CHECK(f.DlqReasons() == std::vector<std::string>{common::crash_guard::kReason});
  CHECK(f.Metric("replayer_events_dead_lettered_total{reason=\"crash_loop\"}") == 1);
  CHECK(DlqDetails(f) == std::vector<std::string>{
                             "delivery 4; instance core-2 began reading delivery 3 at unix ms "
                             "1765000000000 and never finished; 1 reader stopped on it before"});
  const uint64_t other_seq = died_on_seq == 1 ? 2 : 1;
  auto v = (*bucket)->Get(common::crash_guard::Key("replayer", other_seq));
  REQUIRE(v.ok());
  CHECK_FALSE(v->has_value());
}

TEST_CASE("an event one reader died on is read again and stored", "[integration][replayer]") {
  Fixture f(0, 1);
  testsupport::UmamiStandIn umami(f.sites);
  PublishEvent(f, "died-once");
  const uint64_t seq =
      testsupport::DieReading(*f.client, ReplayerSpec(), 1, 2, "died-once", "core-2");
  REQUIRE(seq != 0);
  auto bucket = common::KvBucket::Bind(*f.client, "crash_guard");
  REQUIRE(bucket.ok());

  f.StartReplayer({{"UMAMI_URLS", umami.url()}, {"REPLAYER_ACK_WAIT", "3s"}});
  REQUIRE(f.WaitDrained(60'000));
  const auto stored = umami.StoredEvents();
  REQUIRE(stored.size() == 1);
  CHECK(stored[0].url == "/died-once");
  CHECK(f.DlqReasons().empty());
  auto v = (*bucket)->Get(common::crash_guard::Key("replayer", seq));
  REQUIRE(v.ok());
  CHECK_FALSE(v->has_value());
}
