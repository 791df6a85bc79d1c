// LeaseKeeper against a real nats-server that goes away for longer than the lease TTL: once it
// is back the keeper leads again within its poll, not a TTL later (common/lease_keeper.cpp: no
// create while disconnected).
#include "common/lease_keeper.h"

#include <nats/nats.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

#include "common/metrics.h"
#include "common/nats_client.h"
#include "common/topology.h"
#include "tests/support/nats_cluster.h"
#include "tests/support/test_stack.h"

using testsupport::TestStack;
using Clock = std::chrono::steady_clock;

TEST_CASE(
    "a lease lost while NATS was away is taken again at once when it is back (not a TTL later)",
    "[integration][nats]") {
  constexpr auto kTtl = std::chrono::seconds(8);
  TestStack stack({"nats"});
  auto client = testsupport::ConnectNats(stack);
  {
    kvConfig kc;
    kvConfig_Init(&kc);
    kc.Bucket = common::topology::kLocksBucket;
    kc.History = 1;
    kc.TTL = std::chrono::duration_cast<std::chrono::nanoseconds>(kTtl).count();
    kvStore* kv = nullptr;
    REQUIRE(js_CreateKeyValue(&kv, client->js(), &kc) == NATS_OK);
    kvStore_Destroy(kv);
  }
  common::metrics::Registry registry;
  common::LeaseKeeper keeper(*client, "leasetest", common::ThisProcessHolder("t"), registry);
  keeper.Start();
  common::StopFlag never;
  REQUIRE(keeper.WaitForLeadership(never) == common::LeaseKeeper::Wait::kLeads);

  // Away for more than the TTL: the lease is lost, and the key written before has expired by
  // the time the server is back. Meanwhile the keeper would try a create every poll (TTL/10).
  stack.Stop(stack.NatsNode(1));
  REQUIRE(testsupport::WaitFor([&] { return !keeper.Leads(); }, 15'000));
  // The fault itself: the server stays away for the TTL and 2 s more (nothing to wait on while
  // it is stopped: the key expires on its clock when it is back).
  std::this_thread::sleep_for(kTtl + std::chrono::seconds(2));
  auto back = Clock::now();
  stack.Start(stack.NatsNode(1));
  REQUIRE(testsupport::WaitFor([&] { return client->Connected(); }, 20'000));
  auto reconnected_s = std::chrono::duration<double>(Clock::now() - back).count();
  // A create kept from the outage and sent on reconnect would take the key while nobody waits
  // for its answer: the keeper would then see a lease it does not know is its own and wait for
  // it to expire (8 s).
  REQUIRE(testsupport::WaitFor([&] { return keeper.Leads(); }, 20'000));
  auto leads_s = std::chrono::duration<double>(Clock::now() - back).count();
  INFO("reconnected after " << reconnected_s << " s, leads after " << leads_s << " s");
  CHECK(leads_s - reconnected_s < 4.0);
}
