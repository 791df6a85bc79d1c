// The crash-loop guard (common/crash_guard.h) in the replayer, against a real nats-server and a
// stand-in Umami: an event an earlier reader began parsing on its last delivery and never
// finished (its marker is in KV crash_guard) is dead-lettered with the guard's reason and never
// sent; a redelivered event without a marker is parsed under one and stored, and its marker
// removed. The earlier readers are played by the test: it takes the first two deliveries of both
// events from the replayer's durable consumer and leaves a marker for one of them.
#include <catch2/catch.hpp>

#include "common/config.h"
#include "common/crash_guard.h"
#include "common/nats_kv.h"
#include "common/nats_stream.h"
#include "replayer/engine.h"
#include "tests/replayer/fixture.h"
#include "tests/support/nats_cluster.h"
#include "tests/support/umami_standin.h"

using replayer_test::Fixture;
using testsupport::TestEvent;

TEST_CASE("an event its last reader died on is dead-lettered, not sent",
          "[integration][replayer]") {
  Fixture f(0, 1);
  testsupport::UmamiStandIn umami(f.sites);
  for (const char* id : {"died-on", "redelivered"}) {
    TestEvent e;
    e.site = f.sites[0];
    e.id = id;
    e.url = std::string("/") + id;
    REQUIRE(testsupport::PublishRaw(*f.client, "web.events." + e.site,
                                    testsupport::EventJson(e, 1'764'000'000'000), e.id));
  }
  // The replayer's own consumer, as it would create it (nats.c binds only an identical one).
  common::ConfigReader env(std::map<std::string, std::string>{{"REPLAYER_ACK_WAIT", "3s"}});
  const common::ConsumerSpec spec = replayer::ConsumerSpecFor(replayer::ReadReplayerConfig(env));
  const uint64_t died_on_seq = testsupport::DieReading(*f.client, spec, 2, 2, "died-on", "core-2");
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
  const uint64_t other_seq = died_on_seq == 1 ? 2 : 1;
  auto v = (*bucket)->Get(common::crash_guard::Key("replayer", other_seq));
  REQUIRE(v.ok());
  CHECK_FALSE(v->has_value());
}
