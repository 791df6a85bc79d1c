// platformctl streams --serve --dlq-reasons against a real nats-server: WEB_DLQ's messages by
// reason, read from the dead letters' headers, new ones only, and after a purge again.
#include <catch2/catch.hpp>
#include <string>

#include "tests/platformctl/dlq_fixture.h"
#include "tests/support/metrics_scrape.h"

using testsupport::TestStack;

namespace {

void SeedReasons(common::NatsClient& client, int from, int n, const std::string& reason) {
  std::vector<common::OutMessage> batch;
  for (int i = from; i < from + n; ++i) {
    dlqtest::Seed s;
    s.key = "site-" + std::to_string(i % 3);
    s.visitor = "v" + std::to_string(i);
    s.reason = reason;
    s.origin_seq = static_cast<uint64_t>(i);
    s.msg_id = "r-" + std::to_string(i);
    batch.push_back(dlqtest::DeadLetter(s));
  }
  dlqtest::PublishAll(client, batch);
}

}  // namespace

TEST_CASE("the exporter counts each DLQ's messages by reason", "[integration][dlq][reasons]") {
  TestStack stack({"nats"});
  dlqtest::Init(stack);
  auto client = testsupport::ConnectNats(stack);
  SeedReasons(*client, 1, 30, "umami failed this event 4 times while its health checks passed");
  SeedReasons(*client, 31, 12, "not valid JSON: unexpected end at byte 7");
  const int port = testsupport::FreePortRange(1);
  testsupport::ChildProcess exporter(
      {testsupport::BinaryDir() + "/platformctl/platformctl", "streams", "--serve",
       "127.0.0.1:" + std::to_string(port), "--interval", "1s", "--dlq-reasons"},
      {{"NATS_URL", stack.Env("NATS_URL")}}, stack.dir() + "/exporter.log");
  const std::string failed =
      "jetstream_dlq_messages{reason=\"umami failed this event 4 times "
      "while its health checks passed\",stream=\"WEB_DLQ\"} ";
  const std::string json = "jetstream_dlq_messages{reason=\"not valid JSON\",stream=\"WEB_DLQ\"} ";
  auto has = [&](const std::string& sample) {
    return testsupport::Scrape(port).find(sample + "\n") != std::string::npos;
  };
  bool counted =
      testsupport::WaitFor([&] { return has(failed + "30") && has(json + "12"); }, 20'000);
  INFO(testsupport::Scrape(port) << testsupport::ReadFile(stack.dir() + "/exporter.log"));
  REQUIRE(counted);
  CHECK(has("jetstream_dlq_unread_messages{stream=\"WEB_DLQ\"} 0"));
  CHECK(has("jetstream_dlq_unread_messages{stream=\"API_DLQ\"} 0"));
  // New dead letters are added; purged ones leave the count.
  SeedReasons(*client, 43, 5, "not valid JSON: a second fault");
  CHECK(testsupport::WaitFor([&] { return has(json + "17"); }, 20'000));
  auto purge = dlqtest::Ctl(stack, "dlq purge --queue web --reason 'not valid JSON' --yes");
  INFO(purge.out << purge.err);
  REQUIRE(purge.rc == 0);
  CHECK(testsupport::WaitFor([&] { return has(json + "0") && has(failed + "30"); }, 20'000));
  // No payload was read: the exporter's walk keeps headers only.
  CHECK(testsupport::ReadFile(stack.dir() + "/exporter.log").find(dlqtest::kMarker) ==
        std::string::npos);
}
