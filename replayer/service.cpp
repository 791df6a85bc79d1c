#include "replayer/service.h"

#include <spdlog/spdlog.h>

#include <iostream>

#include "common/config.h"
#include "common/http_server.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/nats_client.h"
#include "common/stop_signal.h"
#include "replayer/engine.h"

namespace replayer {

int RunService() {
  core::StopSignal stop;  // first: blocks SIGTERM/SIGINT before any thread starts
  core::NatsLibraryGuard nats_guard;
  auto reader = core::ConfigReader::FromProcess();
  auto common = core::ReadCommonConfig(reader, "0.0.0.0:9464");
  auto config = ReadReplayerConfig(reader);
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

  Engine engine(**nats, config, metrics);
  // NATS may still be connecting, or the streams not yet provisioned: keep trying.
  while (true) {
    auto st = engine.Start();
    if (st) break;
    spdlog::warn("cannot start yet (retrying every 2 s): {}", st.error().message);
    if (stop.WaitFor(std::chrono::seconds(2))) return 0;
  }
  engine.Run(stop);
  spdlog::info("replayer stopped");
  return 0;
}

}  // namespace replayer
