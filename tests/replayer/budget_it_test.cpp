// REPLAYER_MAX_BYTES_IN_FLIGHT holds (issue 36): a fetch asks JetStream for no more bytes than
// the budget has room for, so the replayer never holds more than the budget plus one message,
// however many messages one fetch may take. Against a real nats-server and an Umami that never
// answers (a port that listens and accepts nothing): every message fetched stays held.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

#include "tests/replayer/fixture.h"
#include "tests/support/test_stack.h"
#include "tests/support/web_events.h"

using replayer_test::Fixture;
using testsupport::TestEvent;

namespace {

// A port that listens and never accepts: connections wait in the backlog, nothing is answered.
class Silent {
 public:
  Silent() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    port_ = testsupport::FreePortRange(1);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port_));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
    REQUIRE(listen(fd_, 512) == 0);
  }
  ~Silent() { close(fd_); }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  int fd_ = -1;
  int port_ = 0;
};

}  // namespace

TEST_CASE("the replayer holds at most REPLAYER_MAX_BYTES_IN_FLIGHT plus one message",
          "[integration][replayer][budget]") {
  Fixture f(0, 1);
  Silent umami;
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
  constexpr int64_t kBudget = 1 << 20;
  f.StartReplayer({{"UMAMI_URLS", umami.url()}, {"REPLAYER_MAX_BYTES_IN_FLIGHT", "1MiB"}});
  CHECK(f.Metric("replayer_held_bytes_limit") == kBudget);
  REQUIRE(testsupport::WaitFor([&] { return f.Metric("replayer_held_messages") > 0; }, 20'000));
  // Nothing is sent (Umami never answers), so what is fetched stays: read it for a while.
  double most_bytes = 0, most_held = 0;
  uint64_t most_unacked = 0;
  for (int i = 0; i < 12; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    most_bytes = std::max(most_bytes, f.Metric("replayer_held_bytes"));
    most_held = std::max(most_held, f.Metric("replayer_held_messages"));
    for (const auto& c : f.Read("WEB_EVENTS").consumers)
      most_unacked = std::max(most_unacked, c.unacked);
  }
  INFO("held " << most_held << " messages, " << most_bytes << " bytes; JetStream: " << most_unacked
               << " delivered and unacked");
  CHECK(most_bytes <= static_cast<double>(kBudget + biggest));
  CHECK(most_bytes >= static_cast<double>(kBudget - 2 * biggest));  // it did fill the budget
  // What JetStream delivered is what the replayer holds: no fetch brought more and dropped it.
  CHECK(static_cast<double>(most_unacked) <= most_held);
  CHECK(most_held <= static_cast<double>(kBudget / 45'000 + 1));
}

// The fetch asks for at least 1 MiB of room; the server allows messages up to 8 MB, which never
// fit that room: such a message is fetched alone (the one message the budget may go over by)
// rather than waiting for room that never comes.
TEST_CASE("a message bigger than the room a fetch asks for is fetched alone",
          "[integration][replayer][budget]") {
  Fixture f(0, 1);
  Silent umami;
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
  f.StartReplayer({{"UMAMI_URLS", umami.url()}, {"REPLAYER_MAX_BYTES_IN_FLIGHT", "1MiB"}});
  REQUIRE(testsupport::WaitFor([&] { return f.Metric("replayer_held_messages") >= 1; }, 20'000));
  std::this_thread::sleep_for(std::chrono::seconds(2));
  CHECK(f.Metric("replayer_held_messages") == 1);  // over the budget: nothing more is fetched
  CHECK(f.Metric("replayer_held_bytes") > static_cast<double>(data.size()));
}
