// A running replayer against a private stack (NATS, PostgreSQL, real Umami), for the
// replayer's integration tests; with 0 Umami processes, NATS alone (the test brings a stand-in
// and passes UMAMI_URLS to StartReplayer). Test main thread only.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/nats_client.h"
#include "platformctl/backlog.h"
#include "tests/support/test_stack.h"
#include "tests/support/web_events.h"

namespace replayer_test {

// The reason a dead letter carries when Umami kept failing the event while its health checks
// passed, as the fixture's replayer words it (4: its number of deliveries).
inline const std::string kFailedReason =
    "umami failed this event 4 times while its health checks passed";

class Fixture {
 public:
  explicit Fixture(int umami_processes = 1, int sites = 2);
  ~Fixture();

  void StartReplayer(const std::map<std::string, std::string>& extra_env = {});
  void KillReplayer();               // kill -9
  int StopReplayer(int timeout_ms);  // SIGTERM, returns the exit code

  platformctl::backlog::StreamReading Read(const std::string& stream);
  // Waits until WEB_EVENTS is drained with nothing left behind (tests/support/queue_judge.h:
  // its consumer has nothing pending or unacked, and the stream holds nothing besides). Gives up
  // when the stream has removed no message for stall_ms (a drain's pace is the machine's: a
  // loaded CI host drains slower, not never), or at kDrainCapMs however it moves; then WARNs
  // why, the judgement, the replayer's metrics and the logs.
  bool WaitDrained(int stall_ms);
  static constexpr int kDrainCapMs = 600'000;
  std::vector<std::string> DlqReasons();  // Sa-Dlq-Reason of every WEB_DLQ message, in order
  // Umami asked directly (heartbeat and one send per process, with timings): for a failure report.
  std::string DirectUmamiCheck();
  std::string Metrics();
  double Metric(const std::string& sample);  // a sample line's value; 0 when absent
  int64_t StoredEvents(const std::string& where = "true");
  std::string UmamiDb() const { return stack.Env("UMAMI_DATABASE_URL"); }
  void Publish(const testsupport::TestEvent& e);

  testsupport::TestStack stack;
  std::unique_ptr<common::NatsClient> client;
  std::vector<std::string> sites;
  std::unique_ptr<testsupport::ChildProcess> replayer;
  int metrics_port = 0;
  std::string log_path;
};

}  // namespace replayer_test
