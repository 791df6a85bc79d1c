// REPLAYER_MAX_BYTES_IN_FLIGHT holds (issue 36): a fetch asks JetStream for no more bytes than
// the budget has room for, so the replayer never holds more than the budget plus one message,
// however many messages one fetch may take. Against a real nats-server and an Umami that never
// answers (a port that listens and accepts nothing): every message fetched stays held.

#include <algorithm>
#include <catch2/catch.hpp>

#include "replayer/core_io.h"
#include "tests/replayer/fixture.h"
#include "tests/support/silent_listener.h"
#include "tests/support/test_stack.h"
#include "tests/support/wait.h"
#include "tests/support/web_events.h"

using replayer_test::Fixture;
using testsupport::TestEvent;

TEST_CASE("the replayer holds at most REPLAYER_MAX_BYTES_IN_FLIGHT plus one message",
          "[integration][replayer][budget]") {
  Fixture f(0, 1);
  testsupport::SilentListener umami;
  REQUIRE(umami.bound());
  // 300 events of ~46 KB: the case (one fetch of 100 took 4.6 MB with a 1 MiB budget).
  std::string data = "{";
  for (int k = 0; k < 92; ++k) {
    data += std::string(k == 0 ? "" : ",") + "\"k" + std::to_string(k) + "\":\"" +
            std::string(490, 'x') + "\"";
  }
  data += "}";
  int64_t biggest = 0;
  for (int i = 0; i < 300; ++i) {
    TestEvent e;
    e.site = f.sites[0];
    e.id = "big-" + std::to_string(i);
    e.visitor = i % 30;
    e.seq = i / 30;
    e.data_json = data;
    const auto m = testsupport::EventMessage(e);
    biggest = std::max<int64_t>(biggest, static_cast<int64_t>(m.data.size()) + 256);
    f.Publish(e);
  }
  REQUIRE(biggest > 45'000);
  // A held event is charged as received and as parsed (its payload again): twice its bytes.
  biggest = 2 * biggest + replayer::kHeldMessageBytes;
  constexpr int64_t kBudget = 2 << 20;
  f.StartReplayer({{"UMAMI_URLS", umami.url()}, {"REPLAYER_MAX_BYTES_IN_FLIGHT", "2MiB"}});
  CHECK(f.Metric("replayer_held_bytes_limit") == kBudget);
  REQUIRE(testsupport::WaitFor([&] { return f.Metric("replayer_held_messages") > 0; }, 20'000));
  // Nothing is sent (Umami never answers), so what is fetched stays. Read it at every poll until
  // the budget is full, then on through 3 pull expiries (600 ms each): a fetch under way when it
  // filled has ended by then, and one that brought more would show.
  double most_bytes = 0, most_held = 0;
  uint64_t most_unacked = 0;
  auto within_budget = [&] {
    most_bytes = std::max(most_bytes, f.Metric("replayer_held_bytes"));
    most_held = std::max(most_held, f.Metric("replayer_held_messages"));
    for (const auto& c : f.Read("WEB_EVENTS").consumers)
      most_unacked = std::max(most_unacked, c.unacked);
    return most_bytes <= static_cast<double>(kBudget + biggest);
  };
  CHECK(testsupport::WaitKeeping(
            [&] { return most_bytes >= static_cast<double>(kBudget - 2 * biggest); },
            "the budget filled", within_budget, "held bytes within the budget", 30'000, 250) == "");
  CHECK(testsupport::HoldsFor(within_budget, "held bytes within the budget", 2000, 250) == "");
  INFO("held " << most_held << " messages, " << most_bytes << " bytes; JetStream: " << most_unacked
               << " delivered and unacked");
  CHECK(most_bytes <= static_cast<double>(kBudget + biggest));
  CHECK(most_bytes >= static_cast<double>(kBudget - 2 * biggest));  // it did fill the budget
  // What JetStream delivered is what the replayer holds: no fetch brought more and dropped it.
  CHECK(static_cast<double>(most_unacked) <= most_held);
  CHECK(most_held <= static_cast<double>(kBudget / 90'000 + 1));
}

// The fetch asks for at least 1 MiB of room; the server allows messages up to 8 MB, which never
// fit that room: such a message is fetched alone (the one message the budget may go over by)
// rather than waiting for room that never comes.
TEST_CASE("a message bigger than the room a fetch asks for is fetched alone",
          "[integration][replayer][budget]") {
  Fixture f(0, 1);
  testsupport::SilentListener umami;
  REQUIRE(umami.bound());
  std::string data = "{";
  for (int k = 0; k < 3000; ++k) {
    data += std::string(k == 0 ? "" : ",") + "\"k" + std::to_string(k) + "\":\"" +
            std::string(490, 'x') + "\"";
  }
  data += "}";
  for (int i = 0; i < 2; ++i) {
    TestEvent e;
    e.site = f.sites[0];
    e.id = "huge-" + std::to_string(i);
    e.visitor = i;
    e.data_json = data;
    f.Publish(e);
  }
  f.StartReplayer({{"UMAMI_URLS", umami.url()}, {"REPLAYER_MAX_BYTES_IN_FLIGHT", "2MiB"}});
  REQUIRE(testsupport::WaitFor([&] { return f.Metric("replayer_held_messages") >= 1; }, 20'000));
  // Over the budget: nothing more is fetched, at any poll through 3 pull expiries (600 ms each).
  CHECK(testsupport::HoldsFor([&] { return f.Metric("replayer_held_messages") == 1; },
                              "one message held", 2000, 100) == "");
  CHECK(f.Metric("replayer_held_bytes") > static_cast<double>(data.size()));
}
