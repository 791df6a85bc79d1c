// Integration-test harness for the metricswriter: a private nats-server + PostgreSQL
// (TestStack), streams provisioned by platformctl init, the real metricswriter binary as a child
// process, and helpers to publish batches, read API_DLQ and query the database.
// Not thread-safe: one harness per test case, used from the test's thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/nats_client.h"
#include "common/pg_conn.h"
#include "tests/support/test_stack.h"

namespace mwtest {

inline constexpr const char* kBatches = "SELECT count(*) FROM metrics.batches";
inline constexpr const char* kPoints = "SELECT count(*) FROM metrics.number_points";

struct DlqMessage {
  uint64_t seq = 0;
  std::string subject;
  std::string reason;
  std::string origin_seq;
  std::string msg_id;  // the origin's Nats-Msg-Id (Sa-Dlq-Msg-Id)
  std::string detail;  // Sa-Dlq-Detail
};

class Harness {
 public:
  Harness();
  // When a failed REQUIRE unwinds through it, prints each writer's log tail to stderr first: the
  // stack's directory, and the logs with it, go when the harness does.
  ~Harness();

  // Starts a metricswriter; its /metrics port is metrics_port(index).
  std::unique_ptr<testsupport::ChildProcess> StartWriter(
      int index = 0, const std::map<std::string, std::string>& extra = {});
  int metrics_port(int index) const { return stack_.base_port() + 5 + index; }
  std::string log_path(int index) const;
  std::string Scrape(int index) const;  // the /metrics text ("" when unreachable)
  // A counter or gauge from /metrics (sum over label sets matching `labels`, e.g. "type=\"sum\"").
  double Metric(int index, const std::string& name, const std::string& labels = "") const;

  // Publishes to api.metrics.<tenant>; nullopt msg_id / content_type = header left out.
  void Publish(const std::string& tenant, const std::string& body,
               const std::optional<std::string>& msg_id,
               const std::optional<std::string>& content_type = "application/json");

  std::vector<DlqMessage> ReadDlq();
  // Messages a stream holds now.
  uint64_t StreamMessages(const std::string& stream);
  // Waits until the stream is drained with nothing left behind (tests/support/queue_judge.h:
  // its consumers answer with nothing pending or unacked, and it holds nothing besides). On
  // timeout false, and *judgement (when given) gets the last reading's one-line judgement.
  bool WaitDrained(const std::string& stream, int timeout_ms, std::string* judgement = nullptr);
  // Sets a stream's max message size (-1: none), as an operator would with the nats CLI.
  void SetMaxMsgSize(const std::string& stream, int32_t bytes);
  void DeleteStream(const std::string& stream);
  int64_t Count(const std::string& sql, const std::vector<common::pg::Param>& params = {});
  common::pg::PgConn& pg();        // a fresh connection when the last one broke
  void ResetPg() { pg_.reset(); }  // after a restart of PostgreSQL

  // Waits until Count(sql) == want (or timeout); returns the last count.
  int64_t WaitCount(const std::string& sql, int64_t want, int timeout_ms);

  // Runs `platformctl <args>` with this stack's NATS_URL and `database_url` as DATABASE_URL
  // (empty: left out); returns the exit code, *output gets stdout and stderr.
  int Platformctl(const std::string& args, const std::string& database_url,
                  std::string* output) const;

  testsupport::TestStack& stack() { return stack_; }
  common::NatsClient& nats() { return *nats_; }
  std::string database_url() const { return stack_.Env("DATABASE_URL"); }

 private:
  testsupport::TestStack stack_;
  std::unique_ptr<common::NatsClient> nats_;
  std::unique_ptr<common::pg::PgConn> pg_;
  int dlq_readers_ = 0;
  std::set<int> writers_;  // the indexes StartWriter started, for their logs on a failure
};

// An OTLP/JSON batch of `points` gauge points of one series per point (attribute i), at
// `time_ns`, values value0, value0+1, ...
std::string JsonBatch(int points, int64_t time_ns, double value0 = 1);

int64_t NowNs();
// A pause that is part of what a test does (the pace of its traffic), never a wait for something:
// wait on the condition itself (testsupport::WaitFor, tests/support/wait.h).
void Sleep(int ms);

}  // namespace mwtest
