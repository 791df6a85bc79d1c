#include "replayer/service.h"

#include <spdlog/spdlog.h>

#include <iostream>

#include "common/config.h"
#include "common/http_server.h"
#include "common/lease_keeper.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/nats_client.h"
#include "common/stop_signal.h"
#include "replayer/engine.h"
#include "replayer/http_pool.h"

namespace replayer {

int RunService() {
  core::StopSignal stop;  // first: blocks SIGTERM/SIGINT before any thread starts
  core::NatsLibraryGuard nats_guard;
  auto reader = core::ConfigReader::FromProcess();
  auto common = core::ReadCommonConfig(reader, "0.0.0.0:9464");
  auto config = ReadReplayerConfig(reader);
  (void)ReadHttpPoolOptions(reader);  // read again by the engine's HttpPool: checked here
  try {
    reader.Finish();
  } catch (const core::ConfigError& e) {
    std::cerr << "replayer: " << e.what() << "\n";
    return 2;
  }
  core::SetUpLogging("replayer", common.log_level, common.log_format);

  core::metrics::Registry registry;
  ReplayerMetrics metrics(registry);
  core::NatsClient::Options options;
  options.client_name = "replayer@" + common.instance;
  options.retry_first_connect = true;
  auto nats = core::NatsClient::Connect(common, options);
  if (!nats) {
    spdlog::critical("{}", nats.error().message);
    return 3;
  }
  core::MetricsServer server(registry, [&]() {
    core::Health h;
    h.ok = (*nats)->Connected();
    h.detail = std::string("nats: ") + (h.ok ? "connected" : "not connected") + "\n";
    return h;
  });
  if (auto st = server.Start(common.metrics_listen); !st) {
    spdlog::critical("metrics endpoint: {}", st.error().message);
    return 2;
  }
  spdlog::info(
      "replayer starting: {} umami process(es), {} workers, {} max in flight, metrics "
      "on {}",
      config.umami_urls.size(), config.workers, config.max_in_flight, common.metrics_listen);

  // One leadership term at a time: only the holder of the `replayer` lease consumes. A term
  // ends on SIGTERM or the moment the lease is lost; the engine then stops fetching and
  // releases what it holds, and this instance goes back to waiting for the lease.
  core::LeaseKeeper lease(**nats, "replayer", core::ThisProcessHolder(common.instance), registry);
  lease.Start();
  while (lease.WaitForLeadership(stop)) {
    core::StopFlag term(&stop);
    lease.BindTerm(&term);
    {
      Engine engine(**nats, config, metrics);
      // NATS may still be connecting, or the streams not yet provisioned: keep trying.
      bool started = false;
      while (!term.stopping()) {
        auto st = engine.Start();
        if (st) {
          started = true;
          break;
        }
        spdlog::warn("cannot start yet (retrying every 2 s): {}", st.error().message);
        term.WaitFor(std::chrono::seconds(2));
      }
      if (started) engine.Run(term);
    }
    lease.BindTerm(nullptr);
    if (!stop.stopping()) spdlog::info("waiting for the replayer lease again");
  }
  spdlog::info("replayer stopped");
  return 0;
}

}  // namespace replayer
