#include "replayer/service.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <iostream>
#include <memory>

#include "common/config.h"
#include "common/http_server.h"
#include "common/leader_terms.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/nats_client.h"
#include "common/service_cli.h"
#include "common/stop_signal.h"
#include "replayer/engine.h"
#include "replayer/http_pool.h"

namespace replayer {

namespace {

common::ServiceUsage Usage() {
  common::ServiceUsage u;
  u.name = "replayer";
  u.description =
      "replayer: drains the WEB_EVENTS stream into Umami (POST /api/send), each event stored "
      "once or dead-lettered to WEB_DLQ with its reason; serves /metrics and /healthz.";
  u.read_config = [](common::ConfigReader& r) { ReadServiceConfig(r); };
  u.exit_codes =
      "Exit codes: 0 stopped by SIGTERM or SIGINT; 2 usage or configuration error (also a "
      "METRICS_LISTEN that cannot be bound, a TLS file that cannot be loaded).";
  return u;
}

}  // namespace

ServiceConfig ReadServiceConfig(common::ConfigReader& r) {
  ServiceConfig c;
  c.common = common::ReadCommonConfig(r, kDefaultMetricsListen);
  c.replayer = ReadReplayerConfig(r);
  c.replayer.instance = c.common.instance;
  c.http = ReadHttpPoolOptions(r);
  return c;
}

int RunService(int argc, char** argv, const std::string& version) {
  if (auto rc = common::HandleServiceArguments(argc, argv, Usage(), version)) return *rc;
  common::StopSignal stop;  // first: blocks SIGTERM/SIGINT before any thread starts
  common::NatsLibraryGuard nats_guard;
  auto reader = common::ConfigReader::FromProcess();
  ServiceConfig all = ReadServiceConfig(reader);
  const common::CommonConfig& common = all.common;
  ReplayerConfig& config = all.replayer;
  try {
    reader.Finish();
  } catch (const common::ConfigError& e) {
    std::cerr << "replayer: " << e.what() << "\n";
    return 2;
  }
  common::SetUpLogging("replayer", common.log_level, common.log_format);

  common::metrics::Registry registry;
  ReplayerMetrics metrics(registry);
  metrics.Preset(config.umami_urls, config.max_bytes_in_flight);
  common::LeaseKeeper::RegisterMetrics(registry, "replayer");  // replayer_leader 0 till it leads
  common::metrics::AddProcessMetrics(registry);
  // /healthz answers from the start, 503 until NATS is reached. The slot is declared before
  // the server, so the server (and its health callback) goes first.
  common::ConnectionSlot connected;
  common::MetricsServer server(registry, [&]() {
    common::Health h;
    h.ok = connected.Connected();
    h.detail = std::string("nats: ") + (h.ok ? "connected" : "not connected") + "\n";
    return h;
  });
  // Read at each scrape, leader or not: the engine (which refreshes the other gauges) runs only
  // while this instance leads, and a follower cut off from NATS must not show a stale 1.
  registry.AddCollector([&] { metrics.nats_connected.Set(connected.Connected() ? 1 : 0); });
  if (auto st = server.Start(common.metrics_listen); !st) {
    spdlog::critical("metrics endpoint: {}", st.error().message);
    return 2;
  }
  spdlog::info(
      "replayer {} starting: {} umami process(es), {} workers, {} max in flight, metrics "
      "on {}",
      version, config.umami_urls.size(), config.workers, config.max_in_flight,
      common.metrics_listen);

  common::NatsClient::Options options;
  options.client_name = "replayer@" + common.instance;
  options.retry_until_stopped = &stop;
  // Only the holder of the `replayer` lease consumes. A term ends on SIGTERM or the moment the
  // lease is lost; the engine then stops fetching and releases what it holds.
  auto end = common::RunLeaderTerms(
      common, options, stop, connected, registry, "replayer",
      [&](common::NatsClient& nats, common::LeaseKeeper& lease, common::StopFlag& term) {
        Engine engine(nats, config, metrics);
        engine.OnStatus(
            [&lease](std::map<std::string, int64_t> s) { lease.SetStatus(std::move(s)); });
        // NATS may still be connecting, or the streams not yet provisioned: keep trying.
        while (!term.stopping()) {
          auto st = engine.Start();
          if (st) {
            engine.Run(term);
            break;
          }
          spdlog::warn("cannot start yet (retrying every 2 s): {}", st.error().message);
          term.WaitFor(std::chrono::seconds(2));
        }
        return common::Status::Ok();
      });
  if (end.kind == common::TermsEnd::Kind::kConnectFailed) {
    spdlog::critical("{}", end.error.message);  // a TLS file nats.c cannot load
    return 2;
  }
  spdlog::info("replayer stopped");
  return 0;
}

}  // namespace replayer
