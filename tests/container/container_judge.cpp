// container_judge: the container test's judgements of the queues and the stores, by the same
// code as every other test's (tests/support/queue_judge.h), so phases.sh keeps no rule of its
// own. From the host, like container_load.
//
//   container_judge drained [--wait S] [--empty] STREAM...
//     One line per stream (queue_judge::Describe). Exit 0 when every stream is drained (with
//     --empty: and holds nothing left behind), else 1; with --wait it reads again every 250 ms
//     for up to S seconds until they are.
//   container_judge numbers STREAM
//     "MESSAGES PENDING UNACKED LEFT_BEHIND" (pending and unacked summed over its consumers).
//     Exit 0 when every consumer answered, 1 when one is offline (its numbers unknown: after a
//     NATS restart its raft group elects a leader after the stream's).
//   container_judge tally --prefix P --events N --batches M [--numbers]
//     What is stored of container_load's messages of prefix P (events "P-i", batches "P-b<i>"),
//     one queue_judge::Tally line each (WEB_DLQ's and API_DLQ's messages as the dead-lettered);
//     --numbers prints "EVENTS_STORED EVENT_DUPLICATES EVENTS_LOST BATCHES_STORED BATCHES_LOST"
//     instead. Exit 0 when nothing is lost, else 1.
//
// NATS_URL, NATS_USER, NATS_PASSWORD, NATS_CA as for the services (the test runs it as the
// exporter user, which may read the four streams' info and consumers and nothing else);
// UMAMI_DB_LOCAL and METRICS_DB_LOCAL (tally only): the databases, read with psql. Exit 3 when
// NATS cannot be reached, a stream cannot be read or a database query fails.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/nats_client.h"
#include "platformctl/nats_admin.h"
#include "tests/support/ledger.h"
#include "tests/support/nats_cluster.h"
#include "tests/support/queue_judge.h"

namespace {

using platformctl::backlog::StreamReading;
namespace judge = testsupport::judge;
using Clock = std::chrono::steady_clock;

constexpr int kUnreadable = 3;

std::string EnvOr(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

// Every stream read, or the first one that could not be (its error on stderr).
bool ReadAll(common::NatsClient& client, const std::vector<std::string>& streams,
             std::vector<StreamReading>* out) {
  out->clear();
  for (const auto& s : streams) {
    auto r = platformctl::nats_admin::ReadStream(client, s);
    if (!r) {
      std::cerr << "container_judge: stream " << s << ": " << r.error().message << "\n";
      return false;
    }
    out->push_back(std::move(*r));
  }
  return true;
}

int Drained(common::NatsClient& client, const std::vector<std::string>& streams, double wait_s,
            bool empty) {
  const auto until = Clock::now() + std::chrono::duration<double>(wait_s);
  std::vector<StreamReading> readings;
  bool read = false, done = false;
  while (true) {
    read = ReadAll(client, streams, &readings);
    done = read;
    for (const auto& r : readings) {
      done = done && judge::Drained(r) && (!empty || judge::LeftBehind(r) == 0);
    }
    if (done || Clock::now() >= until) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  for (const auto& r : readings) std::printf("%s\n", judge::Describe(r).c_str());
  if (!read) return kUnreadable;
  return done ? 0 : 1;
}

int Numbers(common::NatsClient& client, const std::string& stream) {
  std::vector<StreamReading> readings;
  if (!ReadAll(client, {stream}, &readings)) return kUnreadable;
  const auto& r = readings[0];
  uint64_t pending = 0, unacked = 0;
  bool answered = true;
  for (const auto& c : r.consumers) {
    pending += c.pending;
    unacked += c.unacked;
    answered = answered && !c.offline;
  }
  std::printf("%llu %llu %llu %llu\n", static_cast<unsigned long long>(r.messages),
              static_cast<unsigned long long>(pending), static_cast<unsigned long long>(unacked),
              static_cast<unsigned long long>(judge::LeftBehind(r)));
  return answered ? 0 : 1;
}

int Tally(common::NatsClient& client, const std::string& prefix, int events, int batches,
          bool numbers) {
  std::vector<StreamReading> dlq;
  if (!ReadAll(client, {"WEB_DLQ", "API_DLQ"}, &dlq)) return kUnreadable;
  testsupport::Ledger ledger(EnvOr("UMAMI_DB_LOCAL"), EnvOr("METRICS_DB_LOCAL"));
  std::vector<std::string> event_ids, batch_ids;
  for (int i = 0; i < events; ++i) event_ids.push_back(prefix + "-" + std::to_string(i));
  for (int i = 0; i < batches; ++i) batch_ids.push_back(prefix + "-b" + std::to_string(i));
  const auto web = judge::Count(
      "web events", events, static_cast<int64_t>(ledger.MissingEvents(event_ids).size()),
      ledger.DuplicateEvents(prefix + "-"), static_cast<int64_t>(dlq[0].messages));
  // A batch is stored at most once (its id is the primary key): no duplicate rows to count.
  const auto api = judge::Count("metric batches", batches,
                                static_cast<int64_t>(ledger.MissingBatches(batch_ids).size()), 0,
                                static_cast<int64_t>(dlq[1].messages));
  if (numbers) {
    std::printf("%lld %lld %lld %lld %lld\n", static_cast<long long>(web.stored),
                static_cast<long long>(web.duplicates), static_cast<long long>(web.Lost()),
                static_cast<long long>(api.stored), static_cast<long long>(api.Lost()));
  } else {
    std::printf("%s\n%s\n", web.Describe().c_str(), api.Describe().c_str());
  }
  return web.Lost() == 0 && api.Lost() == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"judge the queues and the stores as every test does (tests/support/queue_judge.h)"};
  app.require_subcommand(1);
  std::vector<std::string> streams;
  double wait_s = 0;
  bool empty = false;
  auto* drained = app.add_subcommand("drained", "every stream drained: exit 0, else 1");
  drained->add_option("streams", streams)->required();
  drained->add_option("--wait", wait_s, "read again until this many seconds have passed")
      ->check(CLI::NonNegativeNumber);
  drained->add_flag("--empty", empty, "and nothing left behind");
  std::string stream;
  auto* numbers = app.add_subcommand("numbers", "MESSAGES PENDING UNACKED LEFT_BEHIND");
  numbers->add_option("stream", stream)->required();
  std::string prefix;
  int events = 0, batches = 0;
  bool tally_numbers = false;
  auto* tally = app.add_subcommand("tally", "what is stored of a prefix: exit 0 when none lost");
  tally->add_option("--prefix", prefix)->required();
  tally->add_option("--events", events)->check(CLI::NonNegativeNumber);
  tally->add_option("--batches", batches)->check(CLI::NonNegativeNumber);
  tally->add_flag("--numbers", tally_numbers, "numbers instead of the figure's lines");
  CLI11_PARSE(app, argc, argv);

  auto client = testsupport::ConnectFromEnvironment();
  if (!client) {
    std::cerr << "container_judge: " << client.error().message << "\n";
    return kUnreadable;
  }
  if (*drained) return Drained(**client, streams, wait_s, empty);
  if (*numbers) return Numbers(**client, stream);
  try {
    return Tally(**client, prefix, events, batches, tally_numbers);
  } catch (const std::exception& e) {  // psql failed: the store could not be read
    std::cerr << "container_judge: " << e.what() << "\n";
    return kUnreadable;
  }
}
