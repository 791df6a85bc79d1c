// platformctl queue move against a real nats-server: a held message of WEB_EVENTS goes to
// WEB_DLQ with the operator's reason, who and why (dlq list shows it), and leaves the queue; the
// message after it stays; a sequence that is not there moves nothing.
#include <catch2/catch.hpp>

#include "platformctl/queue_move.h"
#include "tests/platformctl/dlq_fixture.h"
#include "tests/support/web_events.h"

using dlqtest::Ctl;
using testsupport::TestStack;

TEST_CASE("queue move takes one held message into its DLQ and says who and why",
          "[integration][queue]") {
  TestStack stack({"nats"});
  dlqtest::Init(stack);
  auto client = testsupport::ConnectNats(stack);
  for (int i = 1; i <= 2; ++i) {
    testsupport::TestEvent e;
    e.site = "site-1";
    e.id = "ev-" + std::to_string(i);
    REQUIRE(testsupport::PublishEvent(*client, e).ok());
  }
  auto run =
      Ctl(stack, "queue move --queue web --seq 1 --why 'crashes every reader'", "USER=alice");
  INFO(run.out << run.err);
  CHECK(run.rc == 0);
  CHECK_THAT(run.out, Catch::Contains("moved WEB_EVENTS sequence 1 (web.events.site-1) to WEB_DLQ "
                                      "sequence 1"));
  CHECK(dlqtest::Count(*client, "WEB_EVENTS") == 1);
  auto queued = dlqtest::ReadAll(*client, "WEB_EVENTS");
  REQUIRE(queued.size() == 1);
  CHECK(queued[0].msg_id == "ev-2");
  auto dead = dlqtest::ReadAll(*client, "WEB_DLQ");
  REQUIRE(dead.size() == 1);
  CHECK(dead[0].subject == "dlq.web.site-1");
  CHECK(dead[0].msg_id == "dlq.WEB_EVENTS.1");

  auto list = Ctl(stack, "dlq list --queue web --all --json");
  INFO(list.out << list.err);
  CHECK(list.rc == 0);
  CHECK_THAT(list.out, Catch::Contains(platformctl::queue::kMovedReason));
  CHECK_THAT(list.out, Catch::Contains("alice@"));
  CHECK_THAT(list.out, Catch::Contains("crashes every reader"));

  // Moved already: nothing there, nothing done.
  auto again = Ctl(stack, "queue move --queue web --seq 1 --why 'crashes every reader'");
  CHECK(again.rc == 1);
  CHECK_THAT(again.err, Catch::Contains("WEB_EVENTS sequence 1 is not there"));
  CHECK(dlqtest::Count(*client, "WEB_DLQ") == 1);
  CHECK(dlqtest::Count(*client, "WEB_EVENTS") == 1);

  auto usage = Ctl(stack, "queue move --queue web --seq 2 --why ''");
  CHECK(usage.rc == 2);
  CHECK(dlqtest::Count(*client, "WEB_EVENTS") == 1);
}
