// webgen: publishes test web events to WEB_EVENTS, for benchmarks and manual runs.
//   webgen --count N [--visitors V] [--sites ID,ID] [--rate R/s] [--prefix P]
// NATS_URL as for the services. Prints the number published and the rate reached.
#include <CLI/CLI.hpp>
#include <chrono>
#include <iostream>
#include <thread>

#include "common/config.h"
#include "common/nats_client.h"
#include "common/nats_stream.h"
#include "tests/support/web_events.h"

int main(int argc, char** argv) {
  CLI::App app{"publish test web events"};
  int count = 1000, visitors = 200;
  double rate = 0;
  std::string sites_csv, prefix = "ev";
  app.add_option("--count", count);
  app.add_option("--visitors", visitors);
  app.add_option("--sites", sites_csv)->required();
  app.add_option("--rate", rate, "events per second; 0 = as fast as acks allow");
  app.add_option("--prefix", prefix, "event id prefix");
  CLI11_PARSE(app, argc, argv);
  auto reader = core::ConfigReader::FromProcess();
  auto common = core::ReadCommonConfig(reader, "127.0.0.1:0");
  reader.Finish();
  auto client = core::NatsClient::Connect(common, {});
  if (!client) {
    std::cerr << client.error().message << "\n";
    return 3;
  }
  std::vector<std::string> sites;
  std::stringstream ss(sites_csv);
  for (std::string s; std::getline(ss, s, ',');) sites.push_back(s);
  std::vector<int> seq(visitors, 0);
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < count; ++i) {
    if (rate > 0) {
      auto due = start + std::chrono::microseconds(static_cast<int64_t>(i * 1e6 / rate));
      std::this_thread::sleep_until(due);
    }
    testsupport::TestEvent e;
    e.visitor = i % visitors;
    e.site = sites[e.visitor % sites.size()];
    e.seq = seq[e.visitor]++;
    e.id = prefix + "-" + std::to_string(i);
    if (auto st = testsupport::PublishEvent(**client, e); !st) {
      std::cerr << "publish " << i << ": " << st.error().message << "\n";
      return 1;
    }
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "published " << count << " in " << secs << " s (" << count / secs << "/s)\n";
  return 0;
}
