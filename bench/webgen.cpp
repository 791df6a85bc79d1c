// webgen: publishes test web events to WEB_EVENTS, for benchmarks and manual runs.
//   webgen --count N [--visitors V] [--first-visitor F] [--sites ID,ID] [--rate R/s]
//          [--prefix P] [--stamp] [--wait-empty SECONDS]
// NATS_URL as for the services. Prints the number published and the rate reached. With
// --wait-empty it then waits until WEB_EVENTS is drained and empty (tests/support/queue_judge.h:
// its consumer has nothing pending or unacked, and nothing is left behind) and exits 0, or 1
// after SECONDS with the last reading's judgement; a cheap poll (one stream reading a 50 ms) for
// timing a drain.
#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <iostream>
#include <map>
#include <mutex>
#include <thread>

#include "common/nats_async.h"
#include "common/nats_client.h"
#include "common/nats_stream.h"
#include "common/topology.h"
#include "platformctl/nats_admin.h"
#include "tests/support/nats_cluster.h"
#include "tests/support/queue_judge.h"
#include "tests/support/web_events.h"

int main(int argc, char** argv) {
  CLI::App app{"publish test web events"};
  int count = 1000, visitors = 200, first_visitor = 0;
  double rate = 0;
  std::string sites_csv, prefix = "ev";
  app.add_option("--count", count);
  app.add_option("--visitors", visitors);
  app.add_option("--first-visitor", first_visitor,
                 "number of the first visitor (visitors F..F+V-1): a second batch of new ones");
  app.add_option("--sites", sites_csv)->required();
  app.add_option("--rate", rate, "events per second; 0 = as fast as acks allow");
  app.add_option("--prefix", prefix, "event id prefix");
  bool stamp = false;
  app.add_flag("--stamp", stamp,
               "put the publish time (unix ns, a string) in the event data as pub_ns");
  double wait_empty = 0;
  app.add_option("--wait-empty", wait_empty,
                 "then wait up to this many seconds for the stream drained and empty");
  CLI11_PARSE(app, argc, argv);
  auto client = testsupport::ConnectFromEnvironment();
  if (!client) {
    std::cerr << client.error().message << "\n";
    return 3;
  }
  std::vector<std::string> sites;
  std::stringstream ss(sites_csv);
  for (std::string s; std::getline(ss, s, ',');) sites.push_back(s);
  std::atomic<int> done{0}, failed{0};
  // Why publishes failed, by the server's (or nats.c's) words: a full stream answers each
  // refused publish with "maximum bytes exceeded", and the edge must be able to say so.
  std::mutex reasons_mu;
  std::map<std::string, int> reasons;
  auto publisher =
      common::AsyncPublisher::Create(**client, [&](uint64_t, const common::Status& st) {
        if (!st) {
          failed++;
          std::lock_guard lock(reasons_mu);
          reasons[st.error().message]++;
        }
        done++;
      });
  if (!publisher) {
    std::cerr << publisher.error().message << "\n";
    return 3;
  }
  std::vector<int> seq(visitors, 0);
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < count; ++i) {
    if (rate > 0) {
      auto due = start + std::chrono::microseconds(static_cast<int64_t>(i * 1e6 / rate));
      std::this_thread::sleep_until(due);
    }
    testsupport::TestEvent e;
    e.visitor = first_visitor + i % visitors;
    e.site = sites[e.visitor % sites.size()];
    e.seq = seq[i % visitors]++;
    e.id = prefix + "-" + std::to_string(i);
    int64_t now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
    int64_t now_ms = now_ns / 1'000'000;
    // A string: as a number (about 1.8e18) the replayer dead-letters it at once, since Umami's
    // numeric(19,4) column cannot hold it.
    if (stamp) e.data_json = "{\"pub_ns\":\"" + std::to_string(now_ns) + "\"}";
    common::OutMessage m;
    m.subject = "web.events." + e.site;
    m.data = testsupport::EventJson(e, now_ms);
    m.msg_id = e.id;
    // Below the publisher's 4,096 pending places: a busy nats-server then slows the loop here
    // instead of failing a publish after nats.c's stall wait.
    while (i - done.load() >= 3000) std::this_thread::sleep_for(std::chrono::microseconds(200));
    if (auto st = (*publisher)->Publish(m, static_cast<uint64_t>(i) + 1); !st) {
      std::cerr << "publish " << i << ": " << st.error().message << "\n";
      return 1;
    }
  }
  while (done.load() < count) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (failed.load() > 0) {
    std::cout << "published " << count << ": " << count - failed.load() << " stored, "
              << failed.load() << " refused\n";
    std::lock_guard lock(reasons_mu);
    for (const auto& [why, n] : reasons) std::cerr << n << " publishes refused: " << why << "\n";
    return 1;
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (count > 0) {
    std::cout << "published " << count << " in " << secs << " s (" << count / secs << "/s)\n";
  }
  if (wait_empty <= 0) return 0;
  auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(wait_empty);
  std::string last = "no reading";
  while (std::chrono::steady_clock::now() < until) {
    auto reading = platformctl::nats_admin::ReadStream(**client, common::topology::kWebEvents);
    if (reading) {
      if (testsupport::judge::Drained(*reading) && testsupport::judge::LeftBehind(*reading) == 0) {
        return 0;
      }
      last = testsupport::judge::Describe(*reading);
    } else {
      last = reading.error().message;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::cerr << "WEB_EVENTS not drained and empty after " << wait_empty << " s: " << last << "\n";
  return 1;
}
